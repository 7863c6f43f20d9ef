"""Python environments from the layout: Debian's system python, a conda prefix, the libc from dpkg."""

from __future__ import annotations

from gpudoctor.image.pythons import environments

from .test_tree import tree_of

NUMPY = b"Name: numpy\nVersion: 1.24.2\n"
# A paragraph as Debian 12's /var/lib/dpkg/status holds it (this machine's, `dpkg -s libc6`).
DPKG = b"Package: libc6\nStatus: install ok installed\nPriority: optional\nVersion: 2.36-9+deb12u14\n\n"


def test_debian_system_python_reads_dist_packages_in_debians_order():
    tree = tree_of(
        {
            "/usr/bin/python3.11": b"",
            "/usr/bin/python3": ("link", "python3.11"),
            "/usr/lib/python3.11": ("dir",),
            "/usr/lib/python3/dist-packages/numpy-1.24.2.egg-info/PKG-INFO": NUMPY,
            "/usr/lib/python3/dist-packages/distro_info-1.5.egg-info": b"Name: distro-info\n",  # a file
            "/usr/local/lib/python3.11/dist-packages/torch-2.4.0.dist-info/METADATA": b"Version: 2.4.0\n",
            "/var/lib/dpkg/status": DPKG,
        }
    )
    (env,) = environments(tree, "arm64", {}, "t")
    assert env["prefix"] == env["base_prefix"] == "/usr"
    assert env["executable"] == "/usr/bin/python3.11"
    assert env["path"][3:] == ["/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"]
    assert env["all"] == {"distro-info": "1.5", "numpy": "1.24.2", "torch": "2.4.0"}
    assert env["libc"] == ["glibc", "2.36"]
    assert env["machine"] == "aarch64"


def test_a_conda_prefix():
    tree = tree_of(
        {
            "/opt/conda/bin/python3.11": b"",
            "/opt/conda/conda-meta/python-3.11.9-hab00c5b_0_cpython.json": b"{}",  # no entry for the dir
            "/opt/conda/lib/python3.11/site-packages/jax-0.4.30.dist-info/METADATA": b"Version: 0.4.30\n",
        }
    )
    (env,) = environments(tree, "amd64", {"PATH": "/opt/conda/bin:/usr/bin"}, "t")
    assert env["conda_meta"] is True
    assert env["distributions"][0]["name"] == "jax"
