"""Where NCCL would find its network plugin (gpudoctor/probes/net_plugin.py), and the libraries probe's
nccl.net_plugin facts, on the H200 capture's loader cache and environment and variants of them.

The plugin paths are real: NVIDIA/nccl#952's log (tests/nccl/data/nccl952_ib_nodev_socket/nccl.log) has
`Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so`; HPC-X 2.24.1's manual
(https://docs.nvidia.com/networking/display/hpcxv2241/ncclnet+plugin, read 2026-12-05) puts its NCCLNet
plugin in $HPCX_DIR/ncclnet_plugin/lib and selects it with NCCL_NET_PLUGIN=ncclnet;
microsoft/mrc-nccl-plugin's README names it by path, `export NCCL_NET_PLUGIN=$PWD/libnccl-net-mrc.so`. The
directory listings around
them are made for each case.
"""

from __future__ import annotations

from gpudoctor.probes import libraries, net_plugin

from .test_libraries import h200_parts
from conftest import fake_host

HPCX = "/opt/hpcx/nccl_rdma_sharp_plugin/lib"
NO_DEFAULT_DIRS = {d: "not found" for d in net_plugin.DEFAULT_DIRS}


def plugin(**changes):
    parts = h200_parts()
    env = dict(parts["env"])
    env.update(changes.pop("env", {}))
    dirs = dict(parts["dirs"])
    dirs.update(changes.pop("dirs", {}))
    dir_errors = changes.pop("dir_errors", NO_DEFAULT_DIRS)
    parts.update(env=env, dirs=dirs, **changes)
    host = fake_host(**parts)
    for d, reason in dir_errors.items():  # a directory listing that fails
        host.rec.dirs.setdefault(d, {"error": reason})
    facts = libraries.probe(host)
    found, path = facts["nccl.net_plugin.found"], facts["nccl.net_plugin.path"]
    return (found.value if found.known else ("unknown", found.unknown)), (path.value if path.known else None)


def test_names_nccl_tries():
    assert net_plugin.plugin_names(None) == ("libnccl-net.so",)
    assert net_plugin.plugin_names("") == ("libnccl-net.so",)
    assert net_plugin.plugin_names("ncclnet") == ("ncclnet", "libnccl-net-ncclnet.so")
    assert net_plugin.plugin_names("/opt/mrc/libnccl-net-mrc.so") == ("/opt/mrc/libnccl-net-mrc.so",)
    assert net_plugin.plugin_names("libnccl-net-ofi.so") == ("libnccl-net-ofi.so",)


def test_the_hpcx_plugin_on_ld_library_path_is_found_where_nccls_log_said():
    env = {"LD_LIBRARY_PATH": f"{HPCX}:/usr/local/nvidia/lib64:/usr/local/nvidia/lib"}
    assert plugin(env=env, dirs={HPCX: ["libnccl-net.so", "libnccl-net.so.0"]}) == (
        True,
        f"{HPCX}/libnccl-net.so",
    )


def test_none_on_the_h200_when_the_default_directories_hold_none():
    # the capture's loader cache (ldconfig -p, filtered to names with nccl among others) has no libnccl-net
    assert plugin(dirs={"/usr/local/nvidia/lib": ["libGL.so.1"]}) == (False, None)


def test_the_h200_capture_itself_did_not_list_the_default_directories():
    found, _ = plugin(dirs={"/usr/local/nvidia/lib": ["libGL.so.1"]}, dir_errors={})
    assert found == (
        "unknown",
        # /usr/lib is: the capture's `find` of libnccl*/libcuda* files (libnccl-net* too) listed it
        "/lib: not recorded in snapshot; /lib64: not recorded in snapshot; "
        "/usr/lib64: not recorded in snapshot",
    )


def test_nccl_net_plugin_names_the_library_by_suffix():
    lib = "/opt/hpcx/ncclnet_plugin/lib"
    env = {"NCCL_NET_PLUGIN": "ncclnet", "LD_LIBRARY_PATH": lib}
    # with NCCL_NET_PLUGIN set, NCCL does not try the plain libnccl-net.so
    assert plugin(env=env, dirs={lib: ["libnccl-net.so"], "/usr/local/nvidia/lib": []}) == (False, None)
    assert plugin(env=env, dirs={lib: ["libnccl-net-ncclnet.so"]}) == (True, f"{lib}/libnccl-net-ncclnet.so")


def test_a_plugin_named_by_path_is_that_file_alone():
    env = {"NCCL_NET_PLUGIN": "/opt/mrc/libnccl-net-mrc.so"}
    assert plugin(env=env, dirs={"/opt/mrc": ["libnccl-net-mrc.so"]}) == (True, "/opt/mrc/libnccl-net-mrc.so")
    assert plugin(env=env, dirs={"/opt/mrc": []}) == (False, None)


def test_in_the_loader_cache():
    parts = h200_parts()
    cache = parts["commands"][0]["stdout"] + (f"\tlibnccl-net.so (libc6,x86-64) => {HPCX}/libnccl-net.so\n")
    parts["commands"][0] = {**parts["commands"][0], "stdout": cache}
    assert plugin(commands=parts["commands"]) == (True, f"{HPCX}/libnccl-net.so")


def test_an_unreadable_loader_cache_is_unknown_with_its_reason():
    commands = [{"argv": ["ldconfig", "-p"], "error": "no permission"}]
    found, _ = plugin(commands=commands, dirs={"/usr/local/nvidia/lib": []})
    assert found == ("unknown", "the loader cache: no permission")


def test_a_static_plugin_is_not_looked_for():
    found, _ = plugin(env={"NCCL_NET_PLUGIN": "STATIC_PLUGIN"})
    assert found == (
        "unknown",
        "NCCL_NET_PLUGIN=STATIC_PLUGIN: a plugin linked into the program is not looked for",
    )
