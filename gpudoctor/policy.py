"""Policy: what a job or image needs of the host, as facts that the shipped policy rules judge.

A policy lives in `gpudoctor.toml` in the working directory, in `[tool.gpudoctor]` of ./pyproject.toml,
or in the file `--policy FILE` names (see docs/policy.md). Each requirement it sets becomes `policy.*` facts
(FACT_SPECS); the rules of rules/policy.yaml (POLICY-GPU-COUNT, POLICY-DRIVER-MIN, ...; severity error)
compare the host's facts with them, beside the other shipped rules, so reports, JUnit and exit codes treat
an unmet requirement like any other finding. A requirement the policy does not set is no fact, and its rule
does not apply (engine/evaluate.py's PARAMETERS). The policy also sets the default --fail-on and ignores
rules, each with a written reason.

Policy files are data: parsed as TOML with a size limit and checked strictly; every problem is reported
at once with the file and the key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple, Optional

from packaging.version import Version

from . import toml_reader
from .datafiles import read_capped_text
from .engine.conditions import PatternError, compile_pattern, version_range
from .engine.model import FAIL_ON
from .facts import FRAMEWORKS, Fact, FactSpec, known

FILE_NAME = "gpudoctor.toml"
MAX_BYTES = 256 * 1024
FLEET_PREFIX = "GD-FLEET-"  # fleet rules: `fleet` checks their ignores (commands/fleet.py)
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
# What a policy sets, as the facts rules/policy.yaml reads; each is there only when the policy sets it.
FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "policy.file",
        "str",
        "",
        "policy: the policy file, as the rules' why names it (a pyproject.toml with ` [tool.gpudoctor]`); "
        "each other policy.* fact is there only where the policy sets its key, and a rule that reads one is "
        "part of a check only then",
    ),
    FactSpec("policy.gpus.count", "int", "", "policy: the GPU count required (gpus.count or gpus.min_count)"),
    FactSpec(
        "policy.gpus.count_bound", "str", "", "policy: `exactly` (gpus.count) or `at least` (gpus.min_count)"
    ),
    FactSpec(
        "policy.gpus.count_key", "str", "", "policy: the key that sets it: `gpus.count` or `gpus.min_count`"
    ),
    FactSpec("policy.gpus.model", "str", "", "policy: gpus.model, the pattern each GPU's name must match"),
    FactSpec(
        "policy.gpus.model_pattern",
        "str",
        "",
        "policy: gpus.model as the rule matches it: a regular expression that ignores case, `(?i:MODEL)`",
    ),
    FactSpec("policy.gpus.min_memory_gb", "float", "GB", "policy: gpus.min_memory_gb, memory each GPU needs"),
    FactSpec(
        "policy.gpus.min_memory_bytes", "int", "bytes", "policy: gpus.min_memory_gb in bytes (10^9 a GB)"
    ),
    FactSpec(
        "policy.gpus.nvlink_all_active",
        "bool",
        "",
        "policy: true when gpus.nvlink_all_active requires NVLink with every link active (absent when false)",
    ),
    FactSpec(
        "policy.driver.min_version", "version", "", "policy: driver.min_version, the oldest driver allowed"
    ),
    FactSpec(
        "policy.driver.cuda",
        "str",
        "",
        "policy: driver.cuda, the range driver.max_cuda must lie in, e.g. >=12.4,<14",
    ),
    FactSpec(
        "policy.cudnn.version", "str", "", "policy: cudnn.version, the range every cuDNN copy must lie in"
    ),
    FactSpec("policy.frameworks.torch", "bool", "", "policy: true when frameworks.gpu lists torch"),
    FactSpec("policy.frameworks.tensorflow", "bool", "", "policy: true when frameworks.gpu lists tensorflow"),
    FactSpec("policy.frameworks.jax", "bool", "", "policy: true when frameworks.gpu lists jax"),
    FactSpec("policy.frameworks.cupy", "bool", "", "policy: true when frameworks.gpu lists cupy"),
    FactSpec(
        "policy.frameworks.onnxruntime", "bool", "", "policy: true when frameworks.gpu lists onnxruntime"
    ),
    FactSpec(
        "policy.interconnect.ib_ports_active",
        "int",
        "",
        "policy: interconnect.ib_ports_active, the InfiniBand/RoCE ports that must be active",
    ),
    FactSpec(
        "policy.interconnect.ib_rate_gbps",
        "float",
        "Gb/s",
        "policy: interconnect.ib_rate_gbps, the rate each active port must run at",
    ),
)


class PolicyError(Exception):
    """A policy that cannot be used; `problems` are lines like 'gpudoctor.toml: gpus.count: ...'."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Policy(NamedTuple):
    path: str  # the file it came from
    prefix: str  # "" for gpudoctor.toml, "tool.gpudoctor." in a pyproject.toml: how keys are named
    fail_on: Optional[str]
    facts: dict[str, Fact]  # the requirements it sets, as policy.* facts
    ignore: tuple[tuple[str, str], ...]  # (rule id, reason)

    def check_ignores(self, rule_ids: set[str]) -> None:
        """Ignoring a rule that does not exist is a typo that would silently ignore nothing. Fleet rules'
        ids (GD-FLEET-*) are `fleet`'s to check: one policy file serves both."""
        problems = [
            f"{self.path}: {self.prefix}ignore.{rid}: no such rule (`gpudoctor rules list` shows them)"
            for rid, _ in self.ignore
            if rid not in rule_ids and not rid.startswith(FLEET_PREFIX)
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
        try:  # the pattern a rule `matches`: RE2, as rule files (engine/conditions.py)
            compile_pattern(_case_blind(gpus["model"]))
        except PatternError as e:
            problem("gpus.model", f"not a valid regular expression: {e}")
    if "min_version" in driver:
        try:
            Version(driver["min_version"])
        except ValueError:  # InvalidVersion, or a number too long to convert
            problem("driver.min_version", f"not a version: {driver['min_version']!r}")
    for key, spec in (("driver.cuda", driver.get("cuda")), ("cudnn.version", cudnn.get("version"))):
        if spec is not None and version_range(spec) is None:
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
    return Policy(path, prefix, fail_on, _facts(data, where), ignore)


def _facts(data: dict, where: str) -> dict[str, Fact]:
    """The requirements a valid policy sets, as `policy.*` facts (FACT_SPECS); `where` names the policy."""
    gpus, driver, cudnn = data.get("gpus", {}), data.get("driver", {}), data.get("cudnn", {})
    interconnect = data.get("interconnect", {})
    values: dict[str, Any] = {"file": where}
    for key, bound in (("count", "exactly"), ("min_count", "at least")):
        if key in gpus:
            values.update(
                {"gpus.count": gpus[key], "gpus.count_bound": bound, "gpus.count_key": f"gpus.{key}"}
            )
    if "model" in gpus:
        values.update({"gpus.model": gpus["model"], "gpus.model_pattern": _case_blind(gpus["model"])})
    if "min_memory_gb" in gpus:
        gb = gpus["min_memory_gb"]
        values.update({"gpus.min_memory_gb": _whole(gb), "gpus.min_memory_bytes": int(gb * 1e9)})
    if gpus.get("nvlink_all_active"):
        values["gpus.nvlink_all_active"] = True
    for table, key, value in (
        ("driver", "min_version", driver.get("min_version")),
        ("driver", "cuda", driver.get("cuda")),
        ("cudnn", "version", cudnn.get("version")),
        ("interconnect", "ib_ports_active", interconnect.get("ib_ports_active")),
        ("interconnect", "ib_rate_gbps", _whole(interconnect.get("ib_rate_gbps"))),
    ):
        if value is not None:
            values[f"{table}.{key}"] = value
    values.update({f"frameworks.{name}": True for name in data.get("frameworks", {}).get("gpu", [])})
    return {f"policy.{name}": known(value, where) for name, value in values.items()}


def _whole(number: Any) -> Any:
    """160.0 as 160, as messages show it; other values as they are."""
    return int(number) if isinstance(number, float) and number.is_integer() else number


def _case_blind(pattern: str) -> str:
    return f"(?i:{pattern})"


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
