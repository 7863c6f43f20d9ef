"""NVIDIA DCGM's diagnostic for `gpudoctor bench --dcgm LEVEL`: `dcgmi diag -r LEVEL --json`, run under the
bench's deadline, read into one result per test per GPU.

Formats, as dcgmi prints them (its source, NVIDIA/DCGM dcgmi/Diag.cpp, at each release tag; real captures in
tests/fixtures/bench/dcgm/, their sources in its README):
  * DCGM 4.x: {"DCGM Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [{"name":
    "software", "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Fail",
    "warnings": [{"warning": "...", "error_id": 29, "error_category": 8, "error_severity": 5}], "info":
    ["..."]}], "test_summary": {"status": "Fail", "info": [...], "warnings": [...]}}]}]}, "entity_groups":
    [...], "metadata": {"version": "4.5.2", "Driver Version Detected": "580.82.09"}}. A result's entity may
    be a CPU (entity_group "CPU", the CPU EUD test). `test_summary` is the test as a whole: its info and
    warnings are those DCGM tied to no entity (from 4.5.0 it repeats every entity's warnings too).
  * DCGM 3.x: the same tree under "DCGM GPU Diagnostic", "version" at the top level. Per-GPU tests have
    `"gpu_id": "0"` (a string) and `"info"` as one string; the deployment checks have a single result
    without `gpu_id`, or with the integer `gpu_id` of the GPU its errors name, and their warning texts
    under "warnings" (not "warning") inside each warning object.
  * DCGM 2.x: `"gpu_ids": "0"` and "warnings"/"info" as plain strings. nvvs, the engine behind dcgmi,
    prints the same layout with "gpu_ids": "0,1,2,3" for a check of several GPUs, "PASS"-style statuses
    and `null` in place of a test it left out.
  * A run that could not start: {"DCGM Diagnostic": {"runtime_error": "...", "version": "..."}}.
  * No JSON at all when dcgmi cannot reach a host engine: "Error: unable to establish a connection to the
    specified host: localhost" and "Error: Unable to connect to host engine. Host engine connection
    invalid/disconnected." on stdout (dcgmi/Command.cpp). Without --host, `dcgmi diag` starts an embedded
    host engine instead; "Error: Unable to start an embedded host engine. ..." when that fails.
Every dcgmi version writes a warning as "Fail" in its JSON (only its table says "Warn") and leaves out a
result that did not run; nvvs's "WARN" and the table's "Warn" and "Not Run" are still read.
dcgmi exits non-zero when a test fails (226 on a failed software check), its JSON still the answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from ..host.base import NOT_FOUND, TIMED_OUT, HostError

LEVELS = (1, 2, 3, 4)
ARGV_FOR_LEVEL: dict[int, tuple[str, ...]] = {
    level: ("dcgmi", "diag", "-r", str(level), "--json") for level in LEVELS
}
STATUSES = ("pass", "fail", "warn", "skip")
NOT_INSTALLED = "dcgmi not found: DCGM is not installed"
MAX_MESSAGE = 300  # characters of a result's message
MAX_REASON = 200  # characters of a text quoted in an error
MAX_STARTS = 20  # lines starting with "{" tried as the start of the JSON document

# DCGM's spellings of a result, lower-cased, across versions and nvvs ("PASS"); anything else is kept as
# DCGM wrote it, lower-cased, never taken for a pass.
_STATUS_MAP = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "warn": "warn",
    "warning": "warn",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
    "not_run": "skip",
    "notrun": "skip",
}
_ROOT_KEYS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")  # 4.x, then 2.x/3.x
_NO_HOST_ENGINE = re.compile(
    r"unable to establish a connection|unable to connect to host engine|host engine connection invalid",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DcgmResult:
    """One test on one GPU, or on none (`gpu` None: a check of the whole host, or of a CPU). `gpu` is
    DCGM's GPU id, which DCGM gives each GPU as its NVML index when it attaches the GPUs."""

    test: str
    category: str
    status: str  # "pass", "fail", "warn", "skip", or DCGM's own word lower-cased ("unknown" when none)
    gpu: Optional[int]
    message: str  # the warnings and info DCGM attached, "; "-joined, whitespace collapsed, cut to 300


@dataclass(frozen=True)
class Diag:
    """What `dcgmi diag` said. `error` is why there are no (or not all) results; empty when there is none."""

    results: tuple[DcgmResult, ...] = ()
    version: str = ""  # DCGM's version, when the JSON names it
    error: str = ""


def argv(level: int) -> tuple[str, ...]:
    """The command for diagnostic level 1..4: ("dcgmi", "diag", "-r", "2", "--json")."""
    if not isinstance(level, int) or isinstance(level, bool) or level not in ARGV_FOR_LEVEL:
        raise ValueError(f"DCGM diagnostic level {level!r}: expected one of 1, 2, 3, 4")
    return ARGV_FOR_LEVEL[level]


# --- pure parsing -------------------------------------------------------------------------------------


def normalise_status(value: Any) -> str:
    """DCGM's "Pass"/"Fail"/"Warn"/"Skip"/"Not Run" (any case) -> "pass"/"fail"/"warn"/"skip"; another word
    lower-cased as it is; "unknown" for none."""
    word = " ".join(str(value).split()).lower() if isinstance(value, (str, int, float)) else ""
    if not word:
        return "unknown"
    return _STATUS_MAP.get(word, word)


def parse(text: str) -> Diag:
    """`dcgmi diag --json` output -> Diag. Never raises: output that is not JSON, or JSON in no layout
    dcgmi prints, gives Diag(error=...) saying so."""
    return _parse(text)[0]


def _parse(text: str) -> tuple[Diag, bool]:
    """(the Diag, whether the text held a JSON document)."""
    doc = _json_document(text)
    if doc is None:
        return Diag(error=no_json_reason(text)), False
    root_key = next((k for k in _ROOT_KEYS if isinstance(doc, dict) and isinstance(doc.get(k), dict)), None)
    if root_key is None:
        keys = ", ".join(sorted(str(k) for k in doc)[:5]) if isinstance(doc, dict) else type(doc).__name__
        return Diag(error=f"dcgmi printed JSON in no known dcgmi diag layout ({keys or 'empty'})"), True
    body = doc[root_key]
    version = _version(doc, body)
    runtime_error = _clean(body.get("runtime_error"), MAX_MESSAGE)
    categories = body.get("test_categories")
    if categories is not None and not isinstance(categories, list):
        return Diag(version=version, error="dcgmi's JSON has test_categories that is not a list"), True
    results = tuple(r for category in categories or () for r in _category(category))
    if runtime_error:
        error = f"dcgmi diag: {runtime_error}"
    elif not results:
        error = "dcgmi diag reported no test results"
    else:
        error = ""
    return Diag(results=results, version=version, error=error), True


def _json_document(text: str) -> Any:
    """The JSON document in the output, or None. dcgmi may print a line before it or after it ("Error:
    unable to close connection ..."), so the document is the first that starts a line with "{"."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    starts = re.finditer(r"^[ \t]*\{", text, re.MULTILINE)
    for _, match in zip(range(MAX_STARTS), starts):
        try:
            return decoder.raw_decode(text, match.end() - 1)[0]
        except (ValueError, RecursionError):
            continue
    return None


def no_json_reason(text: str) -> str:
    """Why output without JSON is no answer, readable: the host engine not reached, dcgmi's "Error:" line,
    or the first line it printed."""
    lines = _lines(text)
    if not lines:
        return "dcgmi printed nothing"
    engine = host_engine_reason(text)
    if engine:
        return engine
    error = next((line for line in lines if line.lower().startswith("error")), None)
    if error is not None:
        return f"dcgmi: {_cut(error, MAX_REASON)}"
    return f"dcgmi printed no JSON: {_cut(lines[0], MAX_REASON)}"


def host_engine_reason(text: str) -> str:
    """What to say when dcgmi's output says it could not connect to a host engine; "" when it does not."""
    engine = next((line for line in _lines(text) if _NO_HOST_ENGINE.search(line)), None)
    if engine is None:
        return ""
    return (
        "dcgmi cannot reach the DCGM host engine (is nv-hostengine running? e.g. "
        f"systemctl start nvidia-dcgm): {_cut(engine, MAX_REASON)}"
    )


def _lines(text: str) -> list[str]:
    """The non-empty lines, whitespace-collapsed."""
    lines = (" ".join(line.split()) for line in (text or "").splitlines())
    return [line for line in lines if line]


def _version(doc: dict, body: dict) -> str:
    """metadata.version (4.x), the top-level version (3.x), or the diagnostic's own (nvvs, runtime errors)."""
    metadata = doc.get("metadata")
    for value in (
        (metadata or {}).get("version") if isinstance(metadata, dict) else None,
        doc.get("version"),
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()
    value = body.get("version")
    return value.strip() if isinstance(value, str) else ""


def _category(category: Any) -> list[DcgmResult]:
    if not isinstance(category, dict):
        return []
    name = category.get("category")
    name = name if isinstance(name, str) else ""
    tests = category.get("tests")
    if not isinstance(tests, list):
        return []
    return [r for test in tests for r in _test(test, name)]


def _test(test: Any, category: str) -> list[DcgmResult]:
    """One result per entry of the test's results; a test with none but a summary, one result (gpu None);
    a test with neither (DCGM lists what it did not run that way) none."""
    if not isinstance(test, dict):  # nvvs writes null for a test it left out
        return []
    name = test.get("name")
    name = name.strip() if isinstance(name, str) else ""
    results = test.get("results")
    entries = [e for e in results if isinstance(e, dict)] if isinstance(results, list) else []
    summary = test.get("test_summary")
    summary = summary if isinstance(summary, dict) else None
    if not entries:
        if summary is None:
            return []
        return [
            DcgmResult(
                name, category, normalise_status(summary.get("status")), None, _message(_texts(summary))
            )
        ]
    own = [_texts(entry) for entry in entries]
    seen = {text for texts in own for text in texts}
    # Test-level texts DCGM tied to no entity belong to every result of the test.
    shared = [text for text in (_texts(summary) if summary else []) if text not in seen]
    return [
        DcgmResult(
            name, category, normalise_status(entry.get("status")), _gpu(entry), _message(texts + shared)
        )
        for entry, texts in zip(entries, own)
    ]


def _gpu(entry: dict) -> Optional[int]:
    """The GPU a result is about: entity_id of a GPU entity (4.x), gpu_id (3.x), gpu_ids naming one GPU
    (2.x, nvvs). None for a CPU entity, a check of several GPUs ("0,1,2,3") or of none."""
    if "entity_group" in entry or "entity_id" in entry:
        group = entry.get("entity_group")
        if not (isinstance(group, str) and group.strip().upper() == "GPU"):
            return None
        return _index(entry.get("entity_id"))
    for key in ("gpu_id", "gpu_ids"):
        if key in entry:
            return _index(entry[key])
    return None


def _index(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _texts(entry: dict) -> list[str]:
    """The warning texts, then the info texts, of a result or summary, each whitespace-collapsed."""
    texts: list[str] = []
    for key in ("warnings", "info"):
        value = entry.get(key)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):  # {"warning": ...}; 3.x deployment checks say "warnings"
                item = item.get("warning", item.get("warnings"))
            text = _clean(item, None)
            if text and text not in texts:
                texts.append(text)
    return texts


def _clean(value: Any, limit: Optional[int]) -> str:
    if not isinstance(value, str):
        return ""
    text = " ".join(value.split())
    return _cut(text, limit) if limit else text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _message(texts: list[str]) -> str:
    return _cut("; ".join(texts), MAX_MESSAGE)


# --- running it ---------------------------------------------------------------------------------------


def run(host: Any, level: int, timeout: float) -> Diag:
    """`dcgmi diag -r LEVEL --json` on `host`, within `timeout` seconds. Never raises for what the host
    answers (ValueError for a level argv() refuses): a missing dcgmi, a run cut off by the time limit, a
    host engine that is not running, all give Diag(error=...)."""
    command = argv(level)
    timed_out = f"dcgmi diag -r {level} did not finish within {timeout:g} s"
    try:
        result = host.run(command, timeout=timeout)
    except HostError as e:
        if e.reason == NOT_FOUND:
            return Diag(error=NOT_INSTALLED)
        if e.reason == TIMED_OUT:  # the live Host says so rather than returning rc None
            return Diag(error=timed_out)
        detail = f" ({_cut(' '.join(e.detail.split()), MAX_REASON)})" if e.detail else ""
        return Diag(error=f"dcgmi diag -r {level}: {e.reason}{detail}")
    if result.rc is None:
        return Diag(error=timed_out)
    diag, found_json = _parse(result.stdout)
    if found_json or result.rc == 0:
        return diag
    first = host_engine_reason(f"{result.stdout}\n{result.stderr}")
    first = first or next(iter(_lines(result.stderr) + _lines(result.stdout)), "")
    reason = f": {_cut(first, MAX_REASON)}" if first else ", printing nothing"
    return Diag(error=f"dcgmi diag -r {level} exited with status {result.rc}{reason}")
