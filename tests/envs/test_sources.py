"""The small files that name environments, parsed from real ones."""

from __future__ import annotations

import pytest

from gpudoctor.envs import sources

# ~/.conda/environments.txt as a user printed it (https://github.com/conda/conda/issues/2704, comment of
# 2016-06-16; cut to its first lines): the same environment listed twice, and every environment ever made.
ENVIRONMENTS_TXT = """\
/Users/klay6683/miniconda3/envs/py27
/Users/klay6683/miniconda3/envs/blogging
/Users/klay6683/miniconda3/envs/vpython
/Users/klay6683/miniconda3/envs/scipy_prob
/Users/klay6683/miniconda3/envs/ipy3
/Users/klay6683/miniconda3/envs/py35
/Users/klay6683/miniconda3/envs/py34
/Users/klay6683/miniconda3/envs/pandas34_testing
/Users/klay6683/miniconda3/envs/spiceypy_test
/Users/klay6683/miniconda3/envs/spice_test
/Users/klay6683/miniconda3/envs/py27
/Users/klay6683/src/pandas/asv_bench/env/8e32a143b1cc95ab368958adfadd00e4
/Users/klay6683/miniconda3/envs/py34
/Users/klay6683/miniconda3/envs/py34
"""

# ipykernel 6's kernel.json in a conda environment (akirachuangjp/envoracle@
# f929dcf147acc79ff557f8bc7cd11e3f05e622da:share/jupyter/kernels/python3/kernel.json).
KERNEL_JSON = """{
 "argv": [
  "/home/akira/anaconda3/envs/envoracle/bin/python",
  "-m",
  "ipykernel_launcher",
  "-f",
  "{connection_file}"
 ],
 "display_name": "Python 3 (ipykernel)",
 "language": "python",
 "metadata": {
  "debugger": true
 }
}"""

# An older ipykernel's, without metadata (AlessandroSav/envs_on_git@0a9acf34829589a191ef9f31028a54eaa7f86626:
# share/jupyter/kernels/python3/kernel.json).
OLD_KERNEL_JSON = """{
 "argv": [
  "/Users/acmsavazzi/opt/anaconda3/envs/myenv/bin/python",
  "-m",
  "ipykernel_launcher",
  "-f",
  "{connection_file}"
 ],
 "display_name": "Python 3",
 "language": "python"
}"""

# pyvenv.cfg written by `python3 -m venv` (Python 3.12.3) on a Linux host (00dylan00/scGPT_playground@
# 1647f9ae25be3cae193a6ef57856812f8ddd1d82:.venv/pyvenv.cfg). uv's (`version_info`) is made by the real uv
# in tests/workstation.py.
VENV_PYVENV_CFG = """home = /bin
include-system-site-packages = false
version = 3.12.3
executable = /usr/bin/python3.12
command = /bin/python3 -m venv /aloy/home/ddalton/projects/scGPT_playground/.venv
"""


def test_environments_txt_each_prefix_once_in_first_order():
    prefixes = sources.environments_txt(ENVIRONMENTS_TXT)
    assert prefixes[:3] == [
        "/Users/klay6683/miniconda3/envs/py27",
        "/Users/klay6683/miniconda3/envs/blogging",
        "/Users/klay6683/miniconda3/envs/vpython",
    ]
    assert len(prefixes) == 11
    assert prefixes[-1] == "/Users/klay6683/src/pandas/asv_bench/env/8e32a143b1cc95ab368958adfadd00e4"
    assert sources.environments_txt("") == []


def test_kernel_json_names_its_interpreter():
    assert sources.kernel_spec(KERNEL_JSON) == sources.KernelSpec(
        "/home/akira/anaconda3/envs/envoracle/bin/python", "Python 3 (ipykernel)", "python"
    )
    assert (
        sources.kernel_spec(OLD_KERNEL_JSON).argv0 == "/Users/acmsavazzi/opt/anaconda3/envs/myenv/bin/python"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "not JSON"),
        ("[]", "not a JSON object"),
        ('{"argv": [], "language": "python"}', "no argv to start the kernel with"),
        ('{"display_name": "x"}', "no argv to start the kernel with"),
    ],
)
def test_a_kernel_json_that_is_not_one_says_why(text, why):
    with pytest.raises(ValueError, match=why):
        sources.kernel_spec(text)


def test_pyvenv_cfg_keys_and_version():
    cfg = sources.pyvenv_cfg(VENV_PYVENV_CFG)
    assert cfg["home"] == "/bin"
    assert cfg["include-system-site-packages"] == "false"
    assert sources.cfg_version(cfg) == "3.12.3"
    # uv writes only X.Y where it was asked for a series (version_info = 3.14)
    assert sources.cfg_version({"version_info": "3.14"}) == "3.14"
    assert sources.cfg_version({"version_info": "3.11.9.final.0"}) == "3.11.9"
    assert sources.cfg_version({"version": "unknown"}) is None
    assert sources.xy("3.11.4") == "3.11"


@pytest.mark.parametrize(
    ("path", "python"),
    [("/usr/bin/python3.12", True), ("python", True), ("/x/python3.13t", True), ("/bin/bash", False)],
)
def test_is_python_name(path, python):
    assert sources.is_python_name(path) is python
