"""Policy: what a job or image needs of the host, compiled into ordinary rules.

A policy lives in `gpudoctor.toml` in the working directory, in `[tool.gpudoctor]` of ./pyproject.toml,
or in the file `--policy FILE` names (see docs/policy.md). Each requirement becomes one engine Rule
(POLICY-GPU-COUNT, POLICY-DRIVER-MIN, ...; severity error) that the same engine evaluates beside the
shipped rules, so reports, JUnit and exit codes treat an unmet requirement like any other finding.
The policy also sets the default --fail-on and ignores rules, each with a written reason.

Policy files are data: parsed as TOML with a size limit and checked strictly; every problem is reported
at once with the file and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from packaging.version import Version

from . import toml_reader
from .datafiles import read_capped_text
from .engine.conditions import PatternError, compile_pattern
from .engine.model import FAIL_ON, FixStep, Rule
from .facts import FRAMEWORKS

FILE_NAME = "gpudoctor.toml"
MAX_BYTES = 256 * 1024
# The frameworks the Python probe knows; it lists each at most once, so frameworks[0..4] covers them all.
_ID = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")
# Allowed keys per table, and what each takes (for the error messages).
SCHEMA: dict[str, dict[str, str]] = {
    "": {
        "fail_on": "string",
        "gpus": "table",
        "driver": "table",
        "cudnn": "table",
        "frameworks": "table",
        "interconnect": "table",
        "ignore": "table",  # checked on its own: rule id = "reason"
    },
    "gpus": {
        "count": "integer",
        "min_count": "integer",
        "model": "string",
        "min_memory_gb": "number",
        "nvlink_all_active": "boolean",
    },
    "driver": {"min_version": "string", "cuda": "string"},
    "cudnn": {"version": "string"},
    "frameworks": {"gpu": "list of strings"},
    "interconnect": {"ib_ports_active": "integer", "ib_rate_gbps": "number"},
}
# Version range operators a requirement may use, and the comparison that makes the requirement unmet.
_VIOLATION = {
    ">=": "version_lt",
    ">": "version_le",
    "<=": "version_gt",
    "<": "version_ge",
    "==": "version_ne",
    "!=": "version_eq",
}


class PolicyError(Exception):
    """A policy that cannot be used; `problems` are lines like 'gpudoctor.toml: gpus.count: ...'."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Policy:
    path: str  # the file it came from
    prefix: str  # "" for gpudoctor.toml, "tool.gpudoctor." in a pyproject.toml: how keys are named
    fail_on: Optional[str] = None
    rules: tuple[Rule, ...] = ()
    ignore: tuple[tuple[str, str], ...] = ()  # (rule id, reason)

    def check_ignores(self, rule_ids: set[str]) -> None:
        """Ignoring a rule that does not exist is a typo that would silently ignore nothing."""
        problems = [
            f"{self.path}: {self.prefix}ignore.{rid}: no such rule (`gpudoctor rules list` shows them)"
            for rid, _ in self.ignore
            if rid not in rule_ids
        ]
        if problems:
            raise PolicyError(problems)


# --- finding and reading --------------------------------------------------------------------------------


def _read(path: Path) -> dict:
    try:
        text = read_capped_text(path, MAX_BYTES)
    except OSError as e:
        raise PolicyError([f"{path}: cannot read: {e.strerror or e}"]) from e
    except UnicodeDecodeError as e:
        raise PolicyError([f"{path}: cannot read: {e}"]) from e
    toml = toml_reader.toml()
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as e:
        raise PolicyError([f"{path}: not valid TOML: {e}"]) from e


def load(explicit: Optional[str], cwd: Optional[Path] = None) -> Optional[Policy]:
    """The policy `--policy` names, else ./gpudoctor.toml, else [tool.gpudoctor] in ./pyproject.toml,
    else None. Raises PolicyError naming the file and key of every problem."""
    where = cwd or Path.cwd()
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise PolicyError([f"{explicit}: no such policy file"])
        if path.name == "pyproject.toml":
            return _from_pyproject(path, required=True)
        return parse(_read(path), str(path))
    own = where / FILE_NAME
    if own.is_file():
        return parse(_read(own), str(own))
    pyproject = where / "pyproject.toml"
    if pyproject.is_file():
        return _from_pyproject(pyproject, required=False)
    return None


def _from_pyproject(path: Path, required: bool) -> Optional[Policy]:
    if not required and not _may_hold_table(path):
        return None  # not parsed: TOML is 2.5 ms of a check run in a project's directory
    try:
        data = _read(path)
    except PolicyError:
        # A project's own broken pyproject.toml is not gpudoctor's business unless it holds our table.
        if required or _mentions_table(path):
            raise
        return None
    tool = data.get("tool", {})
    section = tool.get("gpudoctor") if isinstance(tool, dict) else None
    if section is None:
        if required:
            raise PolicyError([f"{path}: has no [tool.gpudoctor] table"])
        return None
    if not isinstance(section, dict):
        raise PolicyError([f"{path}: tool.gpudoctor: expected a table"])
    return parse(section, str(path), prefix="tool.gpudoctor.")


def _may_hold_table(path: Path) -> bool:
    """Whether a [tool.gpudoctor] table may be in the file: its text spells gpudoctor, or has a \\u or
    \\U escape, which could spell it in a quoted key. True when it cannot be read (reading it says why)."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError:
        return True
    return b"gpudoctor" in data or b"\\u" in data or b"\\U" in data


def _mentions_table(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"tool.gpudoctor" in f.read(MAX_BYTES)
    except OSError:
        return False


# --- validation -----------------------------------------------------------------------------------------


def _type_ok(value: Any, kind: str) -> bool:
    return {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "table": isinstance(value, dict),
        "list of strings": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[kind]


def _range(text: str) -> Optional[list[tuple[str, str]]]:
    """'>=12.4,<14' -> [('>=', '12.4'), ('<', '14')]; None when it is not such a range."""
    from packaging.specifiers import SpecifierSet  # only a policy with requirements needs it (3 ms)

    try:
        spec = SpecifierSet(text)
    except ValueError:  # InvalidSpecifier, or a number too long to convert
        return None
    out = []
    for s in sorted(spec, key=str):
        if s.operator not in _VIOLATION or s.version.endswith(".*"):
            return None
        try:
            Version(s.version)  # as the rule will compare it
        except ValueError:
            return None
        out.append((s.operator, s.version))
    return out or None


def parse(data: dict, path: str, prefix: str = "") -> Policy:
    """A Policy from parsed TOML; PolicyError lists every problem, each as 'FILE: KEY: what is wrong'."""
    problems: list[str] = []

    def problem(key: str, message: str) -> None:
        problems.append(f"{path}: {prefix}{key}: {message}")

    data = dict(data)
    ignore = _ignores(data.pop("ignore"), problem) if "ignore" in data else ()
    for table, keys in SCHEMA.items():
        node = data if table == "" else data.get(table, {})
        if not isinstance(node, dict):
            continue  # reported as a wrong type below
        for key, value in node.items():
            name = f"{table}.{key}" if table else key
            if key not in keys:
                problem(name, f"unknown key (expected one of: {', '.join(keys)})")
            elif not _type_ok(value, keys[key]):
                article = "an" if keys[key][0] in "aeiou" else "a"
                problem(name, f"expected {article} {keys[key]}, got {value!r}")
    if problems:
        raise PolicyError(problems)
    gpus, driver = data.get("gpus", {}), data.get("driver", {})
    cudnn, frameworks = data.get("cudnn", {}), data.get("frameworks", {})
    fail_on = data.get("fail_on")
    if fail_on is not None and fail_on not in FAIL_ON:
        problem("fail_on", f"expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if "count" in gpus and "min_count" in gpus:
        problem("gpus", "give count (exactly) or min_count (at least), not both")
    for key in ("count", "min_count"):
        if key in gpus and gpus[key] < 0:
            problem(f"gpus.{key}", "expected 0 or more")
    if "min_memory_gb" in gpus and gpus["min_memory_gb"] <= 0:
        problem("gpus.min_memory_gb", "expected a positive number of GB")
    if "model" in gpus:
        try:  # the pattern becomes a rule's `matches`: RE2, as rule files (engine/conditions.py)
            compile_pattern(_case_blind(gpus["model"]))
        except PatternError as e:
            problem("gpus.model", f"not a valid regular expression: {e}")
    if "min_version" in driver:
        try:
            Version(driver["min_version"])
        except ValueError:  # InvalidVersion, or a number too long to convert
            problem("driver.min_version", f"not a version: {driver['min_version']!r}")
    for key, spec in (("driver.cuda", driver.get("cuda")), ("cudnn.version", cudnn.get("version"))):
        if spec is not None and _range(spec) is None:
            problem(
                key, f"expected a version range such as '>=12.4,<14' (>=, >, <=, <, ==, !=), got {spec!r}"
            )
    interconnect = data.get("interconnect", {})
    if interconnect.get("ib_ports_active", 1) < 1:
        problem("interconnect.ib_ports_active", "expected 1 or more")
    if interconnect.get("ib_rate_gbps", 1) <= 0:
        problem("interconnect.ib_rate_gbps", "expected a positive rate in Gb/s, e.g. 400")
    for name in frameworks.get("gpu", []):
        if name not in FRAMEWORKS:
            problem("frameworks.gpu", f"unknown framework {name!r} (expected: {', '.join(FRAMEWORKS)})")
    if problems:
        raise PolicyError(problems)
    where = f"{path}" + (f" [{prefix.rstrip('.')}]" if prefix else "")
    return Policy(
        path=path,
        prefix=prefix,
        fail_on=fail_on,
        rules=tuple(
            to_rules(gpus, driver, cudnn, frameworks, where) + interconnect_rules(interconnect, where)
        ),
        ignore=ignore,
    )


def _ignores(raw: Any, problem: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        problem("ignore", 'expected a table of rule id = "reason", e.g. [ignore] GD-SHM-001 = "why"')
        return ()
    out = []
    for rid, reason in raw.items():
        if not _ID.match(rid):
            problem(f"ignore.{rid}", "not a rule id (ids look like GD-PCIE-001)")
        elif not isinstance(reason, str) or not reason.strip():
            problem(f"ignore.{rid}", "an ignored rule needs a written reason: the value is why it is ignored")
        else:
            out.append((rid, " ".join(reason.split())))
    return tuple(out)


# --- compiling to rules ---------------------------------------------------------------------------------


def _rule(
    rid: str, title: str, category: str, when: dict, message: str, why: str, fix: str, **kw: Any
) -> Rule:
    return Rule(
        id=rid,
        title=title,
        severity="error",
        category=category,
        when=when,
        message=message,
        why=why,
        fix=(FixStep("manual", (), fix),),
        **kw,
    )


def _case_blind(pattern: str) -> str:
    return f"(?i:{pattern})"


def _out_of(fact: str, ranges: list[tuple[str, str]]) -> dict:
    """Unmet when any bound is broken."""
    return {"any": [{"fact": fact, _VIOLATION[op]: version} for op, version in ranges]}


def _no_driver(fact: str) -> dict:
    return {"any": [{"fact": "driver.loaded", "eq": False}, fact]}


def to_rules(gpus: dict, driver: dict, cudnn: dict, frameworks: dict, where: str) -> list[Rule]:
    """One rule per requirement, in a fixed order. `where` names the policy in each rule's why."""
    rules: list[Rule] = []

    def why(key: str) -> str:
        return f"Required by the policy in {where} ({key})."

    change = "or change the policy"
    if "count" in gpus or "min_count" in gpus:
        exact = "count" in gpus
        n = gpus["count"] if exact else gpus["min_count"]
        rules.append(
            _rule(
                "POLICY-GPU-COUNT",
                "GPU count the policy requires",
                "gpu",
                {"fact": "gpus.count", "ne" if exact else "lt": n},
                f"The policy requires {'exactly' if exact else 'at least'} {n} GPU(s); "
                "{gpus.count} visible.",
                why("gpus.count" if exact else "gpus.min_count"),
                f"Run on a host (or request a container/job) with {n} GPU(s), {change}.",
            )
        )
    if "model" in gpus:
        rules.append(
            _rule(
                "POLICY-GPU-MODEL",
                "GPU model the policy requires",
                "gpu",
                {"not": {"fact": "gpus[i].name", "matches": _case_blind(gpus["model"])}},
                f"GPU {{gpus[i].index}} ({{gpus[i].name}}) does not match the policy's model pattern "
                f"'{gpus['model']}'.",
                why("gpus.model"),
                f"Schedule the job onto GPUs matching '{gpus['model']}', {change}.",
                for_each="gpus",
            )
        )
    if "min_memory_gb" in gpus:
        gb = gpus["min_memory_gb"]
        rules.append(
            _rule(
                "POLICY-GPU-MEMORY",
                "GPU memory the policy requires",
                "gpu",
                {"fact": "gpus[i].memory.total_bytes", "lt": int(gb * 1e9)},
                f"GPU {{gpus[i].index}} ({{gpus[i].name}}) has {{gpus[i].memory.total_bytes|size}}; "
                f"the policy requires {gb:g} GB (10^9 bytes) per GPU.",
                why("gpus.min_memory_gb"),
                f"Run on GPUs with at least {gb:g} GB each, {change}.",
                for_each="gpus",
            )
        )
    if gpus.get("nvlink_all_active"):
        rules.append(
            _rule(
                "POLICY-NVLINK",
                "NVLink links the policy requires",
                "gpu",
                {
                    "any": [
                        {"fact": "gpus[i].nvlink.links_up", "eq": 0},
                        {"fact": "gpus[i].nvlink.links_down_wired", "gt": 0},
                    ]
                },
                "GPU {gpus[i].index} has {gpus[i].nvlink.links_up} NVLink link(s) active and "
                "{gpus[i].nvlink.links_down_wired} of its wired links inactive; the policy requires NVLink "
                "with every link active.",
                why("gpus.nvlink_all_active"),
                "Check the links with `nvidia-smi nvlink --status`; a link that stays down after a GPU "
                f"reset needs the NVLink bridge or board seen to, {change}.",
                for_each="gpus",
            )
        )
    if "min_version" in driver:
        v = driver["min_version"]
        rules.append(
            _rule(
                "POLICY-DRIVER-MIN",
                "Driver version the policy requires",
                "driver",
                _no_driver({"fact": "driver.version", "version_lt": v}),
                f"The policy requires NVIDIA driver {v} or newer; this host has {{driver.version}} "
                "(kernel module loaded: {driver.loaded}).",
                why("driver.min_version"),
                f"Install driver {v} or newer (a data-center branch), then reboot; {change}.",
            )
        )
    if "cuda" in driver:
        spec = driver["cuda"]
        rules.append(
            _rule(
                "POLICY-CUDA-RANGE",
                "CUDA version the policy requires of the driver",
                "cuda",
                _no_driver(_out_of("driver.max_cuda", _range(spec) or [])),
                f"The policy requires a driver that supports CUDA '{spec}'; driver {{driver.version}} "
                "supports CUDA {driver.max_cuda}.",
                why("driver.cuda"),
                f"Install a driver whose supported CUDA version is in '{spec}', {change}.",
            )
        )
    if "version" in cudnn:
        spec = cudnn["version"]
        rules.append(
            _rule(
                "POLICY-CUDNN-PRESENT",
                "cuDNN the policy requires",
                "cudnn",
                {"fact": "cudnn.installs.count", "eq": 0},
                f"The policy requires cuDNN '{spec}'; no cuDNN was found.",
                why("cudnn.version"),
                f"Install cuDNN '{spec}' (for pip environments: the nvidia-cudnn wheel that matches the "
                f"framework's CUDA), {change}.",
            )
        )
        rules.append(
            _rule(
                "POLICY-CUDNN-RANGE",
                "cuDNN version the policy requires",
                "cudnn",
                _out_of("cudnn.installs[i].version", _range(spec) or []),
                f"cuDNN {{cudnn.installs[i].version}} at {{cudnn.installs[i].path}} "
                f"({{cudnn.installs[i].origin}}) is outside the policy's '{spec}'.",
                why("cudnn.version"),
                f"Remove or replace that copy with a cuDNN in '{spec}', {change}.",
                for_each="cudnn.installs",
            )
        )
    for name in dict.fromkeys(frameworks.get("gpu", [])):  # each once, in the order given
        rules.append(
            _rule(
                f"POLICY-FW-{name.upper()}",
                f"CUDA build of {name} the policy requires",
                "frameworks",
                _gpu_framework(name),
                f"The policy requires a CUDA build of {name} in {{python.executable}}; it is not installed "
                "there, or not as a CUDA build (frameworks found: {frameworks.count}).",
                why("frameworks.gpu"),
                f"Install a CUDA build of {name} into that environment (`gpudoctor check` names the wheel "
                f"for this driver when a CPU build is there), {change}.",
            )
        )
    return rules


def _gpu_framework(name: str) -> dict:
    """Unmet unless some frameworks[j] is `name` with build `cuda`; unknown when the list is unknown."""
    found = [
        {
            "all": [
                {"fact": f"frameworks[{j}].name", "exists": True},
                {"fact": f"frameworks[{j}].name", "eq": name},
                {"fact": f"frameworks[{j}].build", "eq": "cuda"},
            ]
        }
        for j in range(len(FRAMEWORKS))
    ]
    return {"all": [{"fact": "frameworks.count", "ge": 0}, {"not": {"any": found}}]}


def interconnect_rules(interconnect: dict, where: str) -> list[Rule]:
    """Issue 11, part C: what a multi-node job needs of the RDMA ports ([interconnect])."""
    rules: list[Rule] = []
    change = "or change the policy"
    if "ib_ports_active" in interconnect:
        n = interconnect["ib_ports_active"]
        rules.append(
            _rule(
                "POLICY-IB-PORTS",
                "Active RDMA ports the policy requires",
                "system",
                {"fact": "interconnect.ib_ports_active", "lt": n},
                f"The policy requires at least {n} active InfiniBand/RoCE port(s); "
                "{interconnect.ib_ports_active} of {interconnect.ib_ports.count} are active.",
                f"Required by the policy in {where} (interconnect.ib_ports_active).",
                f"Bring the ports up (`ibstat` shows each port's state; GD-IB-001 names those down), "
                f"{change}.",
            )
        )
    if "ib_rate_gbps" in interconnect:
        rate = interconnect["ib_rate_gbps"]
        rules.append(
            _rule(
                "POLICY-IB-RATE",
                "RDMA port rate the policy requires",
                "system",
                {
                    "all": [
                        {"fact": "interconnect.ib_ports[i].state", "eq": "ACTIVE"},
                        {"fact": "interconnect.ib_ports[i].rate_gbps", "lt": rate},
                    ]
                },
                f"RDMA port {{interconnect.ib_ports[i].name}} runs at {{interconnect.ib_ports[i].rate_gbps}} "
                f"Gb/s; the policy requires {rate:g} Gb/s.",
                f"Required by the policy in {where} (interconnect.ib_rate_gbps).",
                "Check the port's cable, transceiver and switch port (`ibstat` shows its rate and width), "
                f"{change}.",
                for_each="interconnect.ib_ports",
            )
        )
    return rules
