"""Where each tool keeps its environments, from the home and the variables that move them."""

from __future__ import annotations

from gpudoctor.envs import places
from gpudoctor.envs.places import Places


class FakeEnvHost:
    def __init__(self, env: dict) -> None:
        self._env = env

    def env(self, name: str):
        return self._env.get(name)


def test_defaults_under_the_home():
    p = Places("/home/u", "/home/u/code", {})
    assert [d for d, _ in places.venv_dirs(p)] == [
        "/home/u/.virtualenvs",
        "/home/u/.local/share/virtualenvs",
        "/home/u/.cache/pypoetry/virtualenvs",
    ]
    assert places.pipx_dirs(p) == ["/home/u/.local/share/pipx/venvs", "/home/u/.local/pipx/venvs"]
    assert places.uv_tool_dir(p) == "/home/u/.local/share/uv/tools"
    assert places.uv_python_dir(p) == "/home/u/.local/share/uv/python"
    assert places.pyenv_dirs(p) == ["/home/u/.pyenv/versions"]
    assert places.environments_txt(p) == "/home/u/.conda/environments.txt"
    assert places.kernel_dirs(p) == [
        "/home/u/.local/share/jupyter/kernels",
        "/usr/local/share/jupyter/kernels",
        "/usr/share/jupyter/kernels",
    ]
    assert places.conda_envs_dirs(p)[:2] == ["/home/u/miniconda3/envs", "/home/u/anaconda3/envs"]
    assert places.conda_envs_dirs(p)[-1] == "/home/u/.conda/envs"


def test_the_variables_move_them():
    env = {
        "WORKON_HOME": "/w",
        "PIPX_HOME": "/px",
        "UV_TOOL_DIR": "/uvt",
        "UV_PYTHON_INSTALL_DIR": "/uvp",
        "PYENV_ROOT": "/pr",
        "XDG_DATA_HOME": "/xdg",
        "JUPYTER_PATH": "/j1:/j2",
        "CONDA_ENVS_DIRS": "/ce",
    }
    p = Places("/home/u", "/", env)
    assert places.venv_dirs(p)[0] == ("/w", "WORKON_HOME")
    assert places.pipx_dirs(p) == ["/px/venvs"]
    assert (places.uv_tool_dir(p), places.uv_python_dir(p)) == ("/uvt", "/uvp")
    assert places.pyenv_dirs(p) == ["/pr/versions", "/home/u/.pyenv/versions"]
    assert places.kernel_dirs(p)[:3] == ["/j1/kernels", "/j2/kernels", "/xdg/jupyter/kernels"]
    assert places.conda_envs_dirs(p)[0] == "/ce"


def test_an_active_conda_env_names_its_installation():
    env_in_base = Places("/home/u", "/", {"CONDA_PREFIX": "/opt/mf/envs/ml"})
    assert places.conda_roots(env_in_base)[0] == "/opt/mf"
    base = Places("/home/u", "/", {"CONDA_PREFIX": "/opt/mf"})
    assert places.conda_roots(base)[0] == "/opt/mf"


def test_from_host_reads_only_the_named_variables():
    host = FakeEnvHost({"HOME": "/home/u", "PATH": "/usr/bin", "SECRET_TOKEN": "x", "VIRTUAL_ENV": ""})
    p = places.from_host(host, "/work")
    assert p.env == {"HOME": "/home/u", "PATH": "/usr/bin"}
    assert (p.home, p.cwd, p.path_dirs()) == ("/home/u", "/work", ["/usr/bin"])
