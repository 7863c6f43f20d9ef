"""The Python probe: the inspected interpreter and the ML frameworks installed in it.

Produces `python.*` and `frameworks.*` from the dump `host.python()` returns: distribution metadata and a
few build-description files, read without importing anything. Each framework records the CUDA it was built
for in its own way, so each has its own small parser; none of them runs framework code.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any, Optional

from packaging.version import Version

from ..facts import Fact, Facts, FactSpec, Inputs, collected, known, list_facts, unknown
from ..host.base import NOT_RECORDED, HostError
from . import EVERY_PROFILE, ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "python.executable",
        "str",
        "",
        "the interpreter inspected: --python, else the active venv, else the active conda env, else "
        "python3 on PATH",
    ),
    FactSpec(
        "python.selected_by",
        "str",
        "",
        "what chose that interpreter: `--python`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `PATH` (python3 found "
        "there), `gpudoctor` (its own, when there is no other), `command` (`gpudoctor run`: the "
        "interpreter the failed command runs), or `--all-envs` (one of every environment `gpudoctor envs` "
        "finds, read from its files)",
    ),
    FactSpec("python.version", "version", "", "its version, e.g. 3.12.3"),
    FactSpec("python.prefix", "str", "", "sys.prefix of that interpreter"),
    FactSpec("python.venv", "bool", "", "it runs in a virtual environment"),
    FactSpec("python.installer", "str", "", "what manages the environment: pip, uv, conda or poetry"),
    FactSpec(
        "python.machine",
        "str",
        "",
        "the machine as that interpreter sees it (os.uname().machine in it): x86_64, aarch64, ...",
    ),
    FactSpec(
        "frameworks.count", "int", "", "ML frameworks installed (torch, tensorflow, jax, cupy, onnxruntime)"
    ),
    FactSpec("frameworks[].name", "str", "", "torch, tensorflow, jax, cupy or onnxruntime"),
    FactSpec(
        "frameworks[].distribution",
        "str",
        "",
        "the installed distribution, e.g. cupy-cuda13x, onnxruntime-gpu",
    ),
    FactSpec("frameworks[].version", "version", "", "installed version, without a local tag"),
    FactSpec("frameworks[].build", "str", "", "`cpu`, `cuda` or `rocm`"),
    FactSpec(
        "frameworks[].cuda",
        "version",
        "",
        "CUDA version the build targets, e.g. 13.0 (major only when only that is known)",
    ),
    FactSpec("frameworks[].cuda_major", "int", "", "major part of frameworks[].cuda"),
    FactSpec("frameworks[].cudnn", "version", "", "cuDNN version the build pins or bundles"),
    FactSpec("frameworks[].rocm", "version", "", "ROCm version of a rocm build"),
    FactSpec(
        "frameworks[].arch_list",
        "list[str]",
        "",
        "derived: compute capabilities a torch CUDA build is compiled for (TORCH_CUDA_ARCH_LIST, +PTX: "
        "embedded PTX): as the imported torch reports them (runtime.torch.arch_list, with --deep), else from "
        "the knowledge table by version and CUDA variant",
    ),
    FactSpec(
        "frameworks[].unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) the build has neither native code nor usable PTX for",
    ),
    FactSpec(
        "frameworks[].unsupported_gpu_count", "int", "", "derived: how many GPUs are in unsupported_gpus"
    ),
    FactSpec(
        "frameworks[].unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in unsupported_gpus",
    ),
    FactSpec(
        "frameworks[].cuda_min_cc",
        "version",
        "",
        "derived: the oldest compute capability the CUDA major of a CUDA build builds for (7.5 for CUDA 13)",
    ),
    FactSpec(
        "frameworks[].cuda_unsupported_gpus",
        "list[int]",
        "",
        "derived: GPUs (NVML index) below frameworks[].cuda_min_cc, which no build of that CUDA major serves",
    ),
    FactSpec(
        "frameworks[].cuda_unsupported_gpu_count",
        "int",
        "",
        "derived: how many GPUs are in cuda_unsupported_gpus",
    ),
    FactSpec(
        "frameworks[].cuda_unsupported_ccs",
        "list[str]",
        "",
        "derived: the distinct compute capabilities of the GPUs in cuda_unsupported_gpus",
    ),
    FactSpec("python.rocm_frameworks", "int", "", "derived: how many installed frameworks are ROCm builds"),
    FactSpec(
        "python.ctranslate2", "version", "", "installed version of ctranslate2 (unknown: not installed)"
    ),
    FactSpec(
        "python.faster_whisper",
        "version",
        "",
        "installed version of faster-whisper, which runs Whisper (convolutions) on CTranslate2",
    ),
)
PROBE = ProbeSpec("python", profiles=EVERY_PROFILE, per_env=True)

PYTHON_FIELDS = ("executable", "version", "prefix", "venv", "installer", "machine")
# Runtimes that dlopen CUDA libraries by soname (gpudoctor/cuda_consumers.py) and the package that makes
# CTranslate2 run convolutions: fact name -> normalised distribution name.
PACKAGES = {"python.ctranslate2": "ctranslate2", "python.faster_whisper": "faster-whisper"}
FRAMEWORK_FIELDS = ("name", "distribution", "version", "build", "cuda", "cuda_major", "cudnn", "rocm")
TORCH_VERSION_PY = "torch/version.py"
TF_BUILD_INFO = "tensorflow/python/platform/build_info.py"
ORT_VERSION_INFO = "onnxruntime/capi/version_info.py"  # Windows wheels: use_cuda, cuda_version, cudnn_version
ORT_BUILD_INFO = "onnxruntime/capi/build_and_package_info.py"  # package_name, __version__, cuda_version
Build = dict[str, Optional[str]]  # build, cuda, cudnn, rocm; "why" is the reason for what stays unknown

# --- pure parsing ---------------------------------------------------------------------------------------


def _parse(source: str, mode: str = "exec") -> ast.AST:
    """ast.parse without the SyntaxWarnings odd text provokes ("invalid decimal literal"): a file read as
    data must not print to the user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(source, mode=mode)


def assignments(text: str) -> dict[str, Any]:
    """Top-level `name = literal` and `name: T = literal` lines, evaluated as literals (never executed)."""
    out: dict[str, Any] = {}
    for m in re.finditer(r"^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=\s*(.+?)\s*$", text, re.M):
        try:
            out[m.group(1)] = ast.literal_eval(_parse(m.group(2), "eval"))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return out


def parse_torch_version_py(text: str) -> dict[str, Optional[str]]:
    """{"version", "cuda", "hip"} of torch/version.py, e.g. "2.11.0+cu130", "13.0", None."""
    values = assignments(text)
    names = (("version", "__version__"), ("cuda", "cuda"), ("hip", "hip"))
    return {key: (str(values[name]) if values.get(name) else None) for key, name in names}


def parse_tf_build_info(text: str) -> dict[str, Any]:
    """TensorFlow's build_info, written `build_info = {...}` or `collections.OrderedDict([(k, v), ...])`."""
    try:
        for node in _parse(text).body:  # type: ignore[attr-defined]
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") == "build_info" for t in node.targets
            ):
                value = node.value
                if isinstance(value, ast.Call) and len(value.args) == 1:
                    value = value.args[0]  # the OrderedDict's literal argument; the call is never made
                return dict(ast.literal_eval(value))
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        pass
    return {}


def tf_version(raw: Any) -> Optional[str]:
    """A build_info version as major.minor: "12.5.1" -> "12.5", "9" -> "9", Windows "64_112" -> "11.2"."""
    text = str(raw or "")
    if text.startswith("64_"):
        digits = text[3:]
        text = f"{digits[:-1]}.{digits[-1]}" if len(digits) > 1 else digits
    return ".".join(text.split(".")[:2]) if re.fullmatch(r"\d+(\.\d+)*", text) else None


def _text(dist: dict, name: str) -> str:
    """One build-description file's text from a distribution entry; "" when absent or not text."""
    texts = dist.get("texts")
    value = texts.get(name) if isinstance(texts, dict) else None
    return value if isinstance(value, str) else ""


def _dists(dump: dict) -> list[dict]:
    """The distribution entries of a dump (a snapshot's python.json may hold anything there)."""
    dists = dump.get("distributions")
    return [d for d in dists if isinstance(d, dict)] if isinstance(dists, list) else []


def public_version(version: str) -> str:
    """Without the local tag: "2.11.0+cu130" -> "2.11.0"."""
    try:
        return Version(version).public
    except ValueError:  # InvalidVersion, or a number too long for int() (Python 3.11+)
        return version.split("+", 1)[0]


def local_tag(version: str) -> str:
    return version.split("+", 1)[1].lower() if "+" in version else ""


def local_build(local: str) -> Build:
    """What a local version tag says: "cu121" -> cuda 12.1, "cpu" -> cpu, "rocm6.2" -> rocm 6.2."""
    m = re.fullmatch(r"cu(\d+)(\d)", local)  # the last digit is the minor version
    if m:
        return {"build": "cuda", "cuda": f"{m.group(1)}.{m.group(2)}"}
    m = re.fullmatch(r"rocm(\d+(?:\.\d+)*)", local)
    if m:
        return {"build": "rocm", "rocm": m.group(1)}
    return {"build": "cpu"} if local == "cpu" else {}


# The distributions whose pins say how a framework was built: CUDA and ROCm libraries and toolkits.
LIBRARY_PREFIXES = ("nvidia-", "cuda-", "pytorch-triton")


def pins(requires: Optional[list]) -> dict[str, Optional[str]]:
    """{name: version pinned with == (else None)} of the hard requirements on the libraries of
    LIBRARY_PREFIXES; extras are optional installs, so they say nothing about this build."""
    lines = (
        [str(line) for line in requires if _names_a_library(str(line))] if isinstance(requires, list) else []
    )
    out: dict[str, Optional[str]] = {}
    for line in lines:
        read = simple_requirement(line)
        if read is None:
            read = _requirement(line)  # anything unusual: packaging decides
        if read is not None and not read[2]:
            out[read[0]] = read[1]
    return out


# The usual shape of a wheel's Requires-Dist line: `name[extras] SPECIFIERS ; marker`, each specifier an
# operator and a plain version (== may end in .* or carry a local tag). Anything else goes to packaging.
_VERSION = r"\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?"
_SPEC = rf"(?:==\s*{_VERSION}(?:\.\*|\+[A-Za-z0-9.]+)?|(?:~=|!=|<=|>=|<|>)\s*{_VERSION})"
# A pattern, compiled (by re's own cache) when first used: compiling it costs a check that reads no
# requirement line half a millisecond.
_SIMPLE = (
    r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[A-Za-z0-9._,\s-]*\])?\s*"
    rf"({_SPEC}(?:\s*,\s*{_SPEC})*)?\s*(?:;\s*(.*?))?\s*$"
)


def simple_requirement(line: str) -> Optional[tuple[str, Optional[str], bool]]:
    """(normalised name, the version of a lone == specifier or None, whether it is an extra's) of a
    requirement line of the usual shape, read without packaging (whose requirements module costs a check
    about 25 ms to import); None for any other shape."""
    m = re.match(_SIMPLE, line)
    if m is None or (m.group(3) is not None and not m.group(3)):
        return None
    specs = [spec.strip() for spec in (m.group(2) or "").split(",") if spec.strip()]
    exact = specs[0][2:].strip() if len(specs) == 1 and specs[0].startswith("==") else None
    return m.group(1).lower().replace("_", "-"), exact, "extra" in (m.group(3) or "")


def _requirement(line: str) -> Optional[tuple[str, Optional[str], bool]]:
    """simple_requirement's answer, by packaging; None for an invalid requirement."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(line)
    except InvalidRequirement:
        return None
    specs = list(req.specifier)
    exact = len(specs) == 1 and specs[0].operator == "=="
    extra = req.marker is not None and "extra" in str(req.marker)
    return req.name.lower().replace("_", "-"), specs[0].version if exact else None, extra


def _names_a_library(line: str) -> bool:
    return line.lstrip().lower().replace("_", "-").replace(".", "-").startswith(LIBRARY_PREFIXES)


def torch_build(dist: dict) -> Build:
    """From torch/version.py, else the local tag (+cu121), else the pinned CUDA wheels it requires."""
    reqs = pins(dist.get("requires"))
    cudnn = next((v for n, v in reqs.items() if re.fullmatch(r"nvidia-cudnn(-cu\d+)?", n)), None)
    text = _text(dist, TORCH_VERSION_PY)
    if text:
        info = parse_torch_version_py(text)
        if info["cuda"]:
            return {"build": "cuda", "cuda": info["cuda"], "cudnn": cudnn}
        if info["hip"]:
            tagged = local_build(local_tag(info["version"] or str(dist.get("version", ""))))
            return {"build": "rocm", "rocm": tagged.get("rocm") or ".".join(info["hip"].split(".")[:2])}
        return {"build": "cpu"}
    found = local_build(local_tag(str(dist.get("version", ""))))
    if found:
        return dict(found, cudnn=cudnn) if found["build"] == "cuda" else found
    for name, pin in reqs.items():
        if pin and (re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", name) or name == "cuda-toolkit"):
            return {"build": "cuda", "cuda": ".".join(pin.split(".")[:2]), "cudnn": cudnn}
    return {"build": "rocm"} if "pytorch-triton-rocm" in reqs else {}


def tensorflow_build(dist: dict) -> Build:
    name = str(dist.get("name", ""))
    if name.endswith("-cpu"):
        return {"build": "cpu"}
    info = parse_tf_build_info(_text(dist, TF_BUILD_INFO))
    if info.get("is_rocm_build") or name.endswith("-rocm"):
        return {"build": "rocm"}
    if info.get("is_cuda_build"):
        cuda, cudnn = tf_version(info.get("cuda_version")), tf_version(info.get("cudnn_version"))
        return {"build": "cuda", "cuda": cuda, "cudnn": cudnn}
    return {"build": "cpu"} if info else {}


def jax_build(names: set[str], jaxlib_version: str) -> Build:
    """From the plugin wheel beside jax (jax-cuda13-plugin); jaxlib before 0.4.16 carried it in its
    local tag instead ("0.4.7+cuda12.cudnn88")."""
    for name in sorted(names, key=lambda n: (n.startswith("jax-cuda"), n), reverse=True):
        m = re.fullmatch(r"jax-(cuda|rocm)(\d)(\d*)-plugin", name)
        if m and m.group(1) == "cuda":
            return {"build": "cuda", "cuda": m.group(2) + m.group(3)}
        if m:  # jax-rocm60-plugin, jax-rocm7-plugin
            return {"build": "rocm", "rocm": m.group(2) + (f".{m.group(3)}" if m.group(3) else "")}
    m = re.fullmatch(r"cuda(\d+)(?:\.cudnn(\d)(\d+))?", local_tag(jaxlib_version))
    if m:
        return {"build": "cuda", "cuda": m.group(1), "cudnn": f"{m[2]}.{m[3]}" if m.group(2) else None}
    return {"build": "cpu"}


def cupy_build(name: str) -> Build:
    """cupy-cuda13x -> CUDA 13; cupy-cuda117 (older naming) -> 11.7; cupy-rocm-5-0 -> ROCm 5.0."""
    m = re.fullmatch(r"cupy-cuda(\d+)x", name) or re.fullmatch(r"cupy-cuda(\d+)(\d)", name)
    if m:
        return {"build": "cuda", "cuda": ".".join(m.groups())}
    m = re.fullmatch(r"cupy-rocm-(\d+)-(\d+)", name)
    if m:
        return {"build": "rocm", "rocm": ".".join(m.groups())}
    return {"why": "source build"}  # plain `cupy` compiles against whatever toolkit it finds


def onnxruntime_build(dist: dict) -> Build:
    """onnxruntime-gpu records its CUDA in capi/version_info.py on Windows and in
    capi/build_and_package_info.py (`cuda_version = '13.0'`) in Linux wheels from 1.21 on; older Linux
    wheels record none, so their CUDA stays unknown (with that reason), never guessed from the version."""
    name = str(dist.get("name", ""))
    if not name.endswith(("-gpu", "-rocm")):
        return {"build": "cpu"}
    if name.endswith("-rocm"):
        return {"build": "rocm"}
    info = assignments(_text(dist, ORT_VERSION_INFO))
    package = assignments(_text(dist, ORT_BUILD_INFO))
    cuda = info.get("cuda_version") or package.get("cuda_version")
    cudnn = info.get("cudnn_version")
    cuda = str(cuda) if cuda and re.fullmatch(r"\d+(\.\d+)*", str(cuda)) else None
    why = None if cuda else f"the wheel records no CUDA version ({ORT_BUILD_INFO} has none)"
    return {"build": "cuda", "cuda": cuda, "cudnn": str(cudnn) if cudnn else None, "why": why}


def installer(dump: dict) -> str:
    """What manages the environment, judged by the marks each tool leaves."""
    cfg = str(dump.get("pyvenv_cfg") or "")
    tools = [str(d.get("installer") or "").lower() for d in _dists(dump)]
    tools = [t for t in tools if t]
    if dump.get("conda_meta"):
        return "conda"
    if any(line.strip().startswith("uv =") for line in cfg.splitlines()) or tools.count("uv") * 2 > len(
        tools
    ):
        return "uv"
    if "pypoetry/virtualenvs" in str(dump.get("prefix") or "") or "poetry" in cfg.lower():
        return "poetry"
    return "pip"


def frameworks(dump: dict) -> list[dict[str, Any]]:
    """One entry per installed framework, in a fixed order: name, distribution, version, build fields."""
    dists = {str(d.get("name")): d for d in _dists(dump)}
    cupys = sorted(n for n in dists if n == "cupy" or n.startswith(("cupy-cuda", "cupy-rocm")))
    jaxlib = str((dists.get("jaxlib") or {}).get("version", ""))
    table = (  # (framework, candidate distributions in order of preference, build reader)
        ("torch", ["torch"], torch_build),
        (
            "tensorflow",
            ["tensorflow", "tensorflow-gpu", "tensorflow-rocm", "tensorflow-cpu", "tf-nightly"],
            tensorflow_build,
        ),
        ("jax", ["jax"], lambda d: jax_build(set(dists), jaxlib)),
        ("cupy", cupys, lambda d: cupy_build(str(d.get("name")))),
        ("onnxruntime", ["onnxruntime-gpu", "onnxruntime-rocm", "onnxruntime"], onnxruntime_build),
    )
    out = []
    for framework, candidates, read in table:
        dist = next((dists[c] for c in candidates if c in dists), None)
        if dist is not None:
            version = public_version(str(dist.get("version", "")))
            out.append(dict(read(dist), name=framework, distribution=str(dist.get("name")), version=version))
    return out


# --- probe ----------------------------------------------------------------------------------------------


def probe(host: Any) -> dict[str, Fact]:
    targets = host.python_targets()
    target, chosen_by = targets[0] if targets else ("", "")
    chosen = known(chosen_by, "gpudoctor") if chosen_by else unknown("not recorded", "gpudoctor")
    try:
        dump = host.python(target or None)
    except HostError as e:
        why = inspection_failure(target, e)
        facts = {f"python.{f}": unknown(why, "python") for f in PYTHON_FIELDS}
        facts["python.selected_by"] = chosen
        facts["frameworks.count"] = unknown(why, "python")
        facts.update({name: unknown(why, "python") for name in PACKAGES})
        return facts
    src = f"python:{dump.get('executable') or 'default'}"
    facts = {"python.selected_by": chosen}
    for field in ("executable", "version", "prefix"):
        value = dump.get(field)
        facts[f"python.{field}"] = known(value, src) if value else unknown("not reported", src)
    if dump.get("prefix") and dump.get("base_prefix"):
        facts["python.venv"] = known(dump["prefix"] != dump["base_prefix"], src)
    else:
        facts["python.venv"] = unknown("not reported", src)
    facts["python.installer"] = known(installer(dump), src)
    facts["python.machine"] = machine(dump, f"{src} os.uname()")
    facts.update(list_facts("frameworks", [_member(fw, src) for fw in frameworks(dump)], src))
    facts.update(package_versions(dump, src))
    return facts


def package_versions(dump: dict, src: str) -> dict[str, Fact]:
    """The PACKAGES' installed versions (the metadata folder's, as `all` lists every distribution);
    unknown "not installed" for one that is not. A dump without `all` is unknown, not "not installed"."""
    every = dump.get("all")
    if not isinstance(every, dict):
        return {name: unknown("not reported", src) for name in PACKAGES}
    out = {}
    for name, dist in PACKAGES.items():
        version = every.get(dist)
        out[name] = (
            known(public_version(version), f"{src} {dist}")
            if isinstance(version, str) and version
            else unknown("not installed", src)
        )
    return out


def machine(dump: dict, src: str) -> Fact:
    """os.uname().machine of the interpreter ("x86_64", "aarch64"). The inspection always answers it (""
    where os has no uname), so a dump without it was recorded before gpudoctor asked: an old snapshot."""
    if "machine" not in dump:
        return unknown(NOT_RECORDED, src)
    value = dump["machine"]
    return known(value, src) if isinstance(value, str) and value else unknown("not reported", src)


def inspection_failure(target: str, error: HostError) -> str:
    """The reason every fact of an environment that could not be inspected carries, in one line."""
    detail = " ".join(error.detail.split()) if error.detail else ""
    detail = detail.replace(f"python inspection of {target} ", "")  # a time-out names the inspection
    if detail.startswith(f"{target}:"):
        detail = detail[len(target) + 1 :].strip()
    return f"inspecting {target or 'the interpreter'} failed: {detail or error.reason}"


def _member(fw: dict[str, Any], src: str) -> dict[str, Fact]:
    """One framework's facts; a field that does not apply to its build says so rather than being absent."""
    s = f"{src} {fw['distribution']}"
    build, why = fw.get("build"), fw.get("why") or "not determined"
    na = "not applicable"
    out = {k: known(fw[k], s) for k in ("name", "distribution", "version")}
    out["build"] = known(build, s) if build else unknown(why, s)
    cuda, cuda_why = fw.get("cuda"), why if build in (None, "cuda") else na
    out["cuda"] = known(cuda, s) if cuda else unknown(cuda_why, s)
    major = str(cuda or "").split(".")[0]
    plain = major.isascii() and major.isdigit() and len(major) < 10  # int() refuses "²" and 5,000 digits
    out["cuda_major"] = known(int(major), s) if plain else unknown(cuda_why, s)
    cudnn_why = "not pinned" if build == "cuda" else cuda_why
    out["cudnn"] = known(fw["cudnn"], s) if fw.get("cudnn") else unknown(cudnn_why, s)
    rocm_why = why if build in (None, "rocm") else na
    out["rocm"] = known(fw["rocm"], s) if fw.get("rocm") else unknown(rocm_why, s)
    return {k: out[k] for k in FRAMEWORK_FIELDS}


def _rocm_frameworks(facts: Facts) -> Fact:
    get = Inputs(facts)
    count = get("frameworks.count")
    builds = [get(f"frameworks[{i}].build") for i in range(count if isinstance(count, int) else 0)]
    return get.result(lambda: (builds.count("rocm"), None))


def derive(facts: Facts) -> dict[str, Fact]:
    """python.rocm_frameworks (gpudoctor/derive.py runs it)."""
    return {"python.rocm_frameworks": _rocm_frameworks(facts)} if collected(facts, "frameworks.count") else {}
