"""Kernel log: the NVIDIA driver's Xid and SXid fault reports, read the least-privileged way that works.

Tried in order, the first that answers wins:

    /dev/kmsg                     records read without blocking until none is left (host/live.py); needs
                                  root or CAP_SYSLOG where kernel.dmesg_restrict=1
    dmesg                         the same ring buffer through syslog(2); the same permission
    journalctl -k -b              the journal's kernel messages of this boot, timestamps since boot
                                  (-o short-monotonic); root or the adm / systemd-journal group

Each is bounded: the newest MAX_LINES lines are kept (the live Host caps what /dev/kmsg and commands give),
and commands run under the check's deadline. When none answers, every Xid fact is unknown with the reason
and `kernel_log.error` says what each way answered and what grants access: an unreadable log is never "no
Xid". The same lines give the sleeps since boot (suspend.*: how many, the last one's kind and time, and
the driver's refusals to sleep), read over the whole log whatever --since says. Events are grouped by PCI
address and code; times are seconds since boot, and `age_seconds` is
/proc/uptime less that. With `check --since DURATION` only the events of that window are kept.

The PCI address is mapped to a GPU index by derive.py (gpus[].bus_id), and the code's category and action
come from the Xid catalogue (rules/knowledge/xid.yaml) there too: this probe only reads.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..facts import Fact, FactSpec, known, list_facts, unknown
from ..host.base import NO_PERMISSION, NOT_FOUND, NOT_RECORDED, HostError
from . import ProbeSpec

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec(
        "kernel_log.status", "str", "", "`ok`, or why the kernel log could not be read: `no permission`, ..."
    ),
    FactSpec(
        "kernel_log.error",
        "str",
        "",
        "when it could not be read: what /dev/kmsg, dmesg and journalctl -k each answered, and what grants "
        "access; empty when it was read",
    ),
    FactSpec("kernel_log.source", "str", "", "what answered: `/dev/kmsg`, `dmesg` or `journalctl -k`"),
    FactSpec(
        "kernel_log.window", "str", "", "the events judged: `since boot`, or `last N s` (check --since)"
    ),
    FactSpec("kernel_log.lines", "int", "", "kernel log lines read (the newest 50,000 at most)"),
    FactSpec("kernel_log.truncated", "bool", "", "more lines than were kept: older events are not judged"),
    FactSpec(
        "kernel_log.earliest_seconds",
        "float",
        "s",
        "time since boot of the oldest line read; above a few seconds, the ring buffer no longer reaches "
        "back to boot and older events are lost",
    ),
    FactSpec("xid.count", "int", "", "distinct NVRM Xid events (by PCI address and code) in the window"),
    FactSpec("xid[].code", "int", "", "the Xid code, e.g. 79"),
    FactSpec("xid[].pci", "str", "", "the GPU's PCI address as domain:bus:device, e.g. 0000:3b:00"),
    FactSpec("xid[].pid", "int", "", "the process the last event names (pid=), when it names one"),
    FactSpec("xid[].process", "str", "", "that process's name (name=), when the line gives it"),
    FactSpec("xid[].text", "str", "", "the last event's text after the code (and pid and name)"),
    FactSpec("xid[].events", "int", "", "how many times this code was reported for this GPU in the window"),
    FactSpec("xid[].first_seconds", "float", "s", "time since boot of the first of them"),
    FactSpec("xid[].last_seconds", "float", "s", "time since boot of the last of them"),
    FactSpec(
        "xid[].age_seconds", "float", "s", "how long ago the last one was (/proc/uptime less last_seconds)"
    ),
    FactSpec(
        "xid[].gpu",
        "int",
        "",
        "derived: the NVML index of the GPU at that PCI address (gpus[].bus_id); unknown when NVML lists "
        "no GPU there (a GPU that fell off the bus)",
    ),
    FactSpec(
        "xid[].where",
        "str",
        "",
        "derived: how reports name the GPU: `GPU 0 (PCI 0000:3b:00)`, or by PCI address alone when it is "
        "not among NVML's GPUs",
    ),
    FactSpec(
        "xid[].catalogued", "bool", "", "derived: the Xid catalogue (rules/knowledge/xid.yaml) lists the code"
    ),
    FactSpec(
        "xid[].mnemonic", "str", "", "derived: NVIDIA's name for the code, e.g. ROBUST_CHANNEL_GPU_ECC_DBE"
    ),
    FactSpec(
        "xid[].bucket", "str", "", "derived: NVIDIA's resolution bucket (immediate action), e.g. RESTART_BM"
    ),
    FactSpec(
        "xid[].category",
        "str",
        "",
        "derived: `hardware`, `driver`, `application` or `nvlink` (the catalogue)",
    ),
    FactSpec(
        "xid[].action",
        "str",
        "",
        "derived: `none`, `restart_app`, `reset_gpu`, `reboot`, `drain_inspect`, `contact_support` or "
        "`follow_other` (the catalogue's reading of the bucket)",
    ),
    FactSpec(
        "xid[].action_text", "str", "", "derived: that action in words, with the command where there is one"
    ),
    FactSpec(
        "suspend.count",
        "int",
        "",
        "sleeps the machine came back from since boot (`PM: suspend exit`, `PM: hibernation: hibernation "
        "exit`), whatever --since says; unknown when none is seen and the log no longer reaches back to boot",
    ),
    FactSpec(
        "suspend.last_kind",
        "str",
        "",
        "the last one's kind: `s2idle`, `shallow`, `deep` (suspend to RAM) or `hibernate`",
    ),
    FactSpec("suspend.last_seconds", "float", "s", "time since boot the machine came back from it"),
    FactSpec("suspend.last_age_seconds", "float", "s", "how long ago that was (/proc/uptime less it)"),
    FactSpec(
        "suspend.refused",
        "int",
        "",
        "times the driver refused to sleep: `NVRM: ... PreserveVideoMemoryAllocations module parameter is "
        "set. System Power Management attempted without driver procfs suspend interface.` (the "
        "nvidia-suspend services did not run)",
    ),
    FactSpec("sxid.count", "int", "", "distinct NVSwitch SXid events (by switch and code) in the window"),
    FactSpec("sxid[].code", "int", "", "the SXid code, e.g. 12028"),
    FactSpec("sxid[].device", "str", "", "the switch, e.g. nvidia-nvswitch0"),
    FactSpec("sxid[].pci", "str", "", "the switch's PCI address as domain:bus:device"),
    FactSpec("sxid[].fatal", "bool", "", "the line says Fatal (true) or Non-fatal (false)"),
    FactSpec("sxid[].text", "str", "", "the last event's text after the code"),
    FactSpec(
        "sxid[].events", "int", "", "how many times this code was reported for this switch in the window"
    ),
    FactSpec("sxid[].first_seconds", "float", "s", "time since boot of the first of them"),
    FactSpec("sxid[].last_seconds", "float", "s", "time since boot of the last of them"),
    FactSpec("sxid[].age_seconds", "float", "s", "how long ago the last one was"),
)
PROBE = ProbeSpec("kernel_log", options=("since",))

KMSG = "/dev/kmsg"
DMESG = ("dmesg",)
JOURNAL = ("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic")
UPTIME = "/proc/uptime"
DMESG_RESTRICT = "/proc/sys/kernel/dmesg_restrict"
MAX_LINES = 50_000  # the newest lines kept (a default 1 MiB ring buffer holds about 10,000)
COMMAND_TIMEOUT = 3.0
ACCESS = (
    "run as root, or grant CAP_SYSLOG (docker run --cap-add SYSLOG), or allow unprivileged reads with "
    "`sysctl kernel.dmesg_restrict=0`, or add the user to the adm or systemd-journal group (journalctl)"
)

# /dev/kmsg: "PRIORITY,SEQUENCE,MICROSECONDS,FLAGS[,...];MESSAGE"; continuation lines (" KEY=value") follow.
# Documented in the kernel's Documentation/ABI/testing/dev-kmsg.
_KMSG = re.compile(r"^(\d+),(\d+),(\d+),[^;]*;(.*)$")
# The patterns held as text are compiled by re's own cache when first used: a check reading /dev/kmsg
# without Xid lines and without --since uses none of them (compiling each cost every check 0.05-0.1 ms).
# dmesg and journalctl -o short-monotonic: "[ 1936.510073] MESSAGE" / "[ 1936.510073] HOST kernel: MESSAGE".
_STAMPED = r"^\[\s*(\d+(?:\.\d+)?)\]\s?(.*)$"
_JOURNAL_KERNEL = r"^\S+ kernel: (.*)$"
# NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
# The older form has no "PCI:" (NVIDIA's Xid documentation: "NVRM: Xid (0000:03:00): 14, Channel 00000001").
_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}(?:\.[0-7])?)\): "
    r"(?P<code>\d+)(?:, (?P<rest>.*))?$"
)
_PID = r"^pid=(?:(\d+)|'?<unknown>'?)(?:, |$)"
_NAME = r"^name=(.*?)(?:, |$)"
# nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)
_SXID = re.compile(
    r"(?P<device>nvidia-nvswitch\d+): SXid \(PCI:(?P<pci>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}"
    r"(?:\.[0-7])?)\): (?P<code>\d+)(?:, (?P<rest>.*))?$"
)
# Sleep and wake, as kernel/power/suspend.c and hibernate.c print them: "PM: suspend entry (deep)",
# "PM: suspend exit", "PM: hibernation: hibernation exit"; ACPI's "ACPI: PM: Waking up from system sleep
# state S3" ("ACPI: Waking up ..." on older kernels) names the state when the entry line is gone.
_SLEEP_ENTRY = r"PM: suspend entry \((\w+)\)"
_SLEEP_EXIT = ("PM: suspend exit", "PM: hibernation: hibernation exit")
_ACPI_WAKE = r"ACPI: (?:PM: )?Waking up from system sleep state S([34])"
_REFUSED = "PreserveVideoMemoryAllocations module parameter is set. System Power Management attempted without"
_DURATION = r"^(\d+(?:\.\d+)?)([smhdw])$"
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

# --- pure parse functions ------------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    """`--since`'s value in seconds: 90s, 30m, 24h, 7d, 2w. ValueError with the reason otherwise."""
    m = re.match(_DURATION, text.strip())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a duration: a number and a unit, s, m, h, d or w (e.g. 24h)")
    return float(m.group(1)) * _UNIT[m.group(2)]


def parse_kmsg(text: str) -> list[tuple[Optional[float], str]]:
    """/dev/kmsg records as (seconds since boot, message); continuation lines are left out."""
    out: list[tuple[Optional[float], str]] = []
    for line in text.splitlines():
        m = _KMSG.match(line)
        if m:
            out.append((int(m.group(3)) / 1_000_000, m.group(4)))
    return out


def parse_dmesg(text: str) -> list[tuple[Optional[float], str]]:
    """dmesg's lines as (seconds since boot, message); a line without a timestamp has None."""
    out: list[tuple[Optional[float], str]] = []
    for line in text.splitlines():
        m = re.match(_STAMPED, line)
        out.append((float(m.group(1)), m.group(2)) if m else (None, line))
    return out


def parse_journal(text: str) -> list[tuple[Optional[float], str]]:
    """journalctl -k -o short-monotonic: (seconds since boot, message); "-- ... --" notes are left out."""
    out: list[tuple[Optional[float], str]] = []
    for line in text.splitlines():
        m = re.match(_STAMPED, line)
        if not m:
            continue
        kernel = re.match(_JOURNAL_KERNEL, m.group(2))
        out.append((float(m.group(1)), kernel.group(1) if kernel else m.group(2)))
    return out


def normalise_pci(address: str) -> Optional[str]:
    """A PCI address as domain:bus:device, lower case, the domain 4 digits: NVML's "00000000:3B:00.0", the
    kernel log's "0000:3b:00" and sysfs's "0000:3b:00.0" all give "0000:3b:00". None when it is not one."""
    m = re.fullmatch(r"([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?", address.strip())
    if not m:
        return None
    return f"{int(m.group(1), 16):04x}:{int(m.group(2), 16):02x}:{int(m.group(3), 16):02x}"


def parse_xid(message: str) -> Optional[dict[str, Any]]:
    """One NVRM Xid line: {"pci", "code", "pid", "process", "text"}, pid and process None when not given
    (pid='<unknown>'); None when it is not an Xid line."""
    m = _XID.search(message)
    if not m:
        return None
    rest = (m.group("rest") or "").strip()
    pid: Optional[int] = None
    process: Optional[str] = None
    pm = re.match(_PID, rest)
    if pm:
        pid = int(pm.group(1)) if pm.group(1) else None
        rest = rest[pm.end() :]
    nm = re.match(_NAME, rest)
    if nm:
        name = nm.group(1).strip()
        process = None if name in ("<unknown>", "'<unknown>'", "") else name
        rest = rest[nm.end() :]
    return {
        "pci": normalise_pci(m.group("pci")),
        "code": int(m.group("code")),
        "pid": pid,
        "process": process,
        "text": rest.strip(),
    }


def parse_sxid(message: str) -> Optional[dict[str, Any]]:
    """One NVSwitch SXid line: {"device", "pci", "code", "fatal", "text"}; fatal is None when the line
    says neither "Fatal" nor "Non-fatal"."""
    m = _SXID.search(message)
    if not m:
        return None
    rest = (m.group("rest") or "").strip()
    first = rest.split(",", 1)[0].strip().lower()
    fatal = True if first == "fatal" else False if first == "non-fatal" else None
    return {
        "device": m.group("device"),
        "pci": normalise_pci(m.group("pci")),
        "code": int(m.group("code")),
        "fatal": fatal,
        "text": rest,
    }


def sleeps(records: list[tuple[Optional[float], str]]) -> dict[str, Any]:
    """The sleeps the records show: {"count": returns from a sleep, "last_seconds", "last_kind" (s2idle,
    shallow, deep, hibernate or None), "refused": the driver's refusals to sleep without its procfs
    interface}."""
    count, refused = 0, 0
    last: Optional[float] = None
    last_kind: Optional[str] = None
    pending: Optional[str] = None
    for seconds, message in records:
        if "PM: " not in message and _REFUSED not in message:
            continue  # most lines: one substring test
        if _REFUSED in message:
            refused += 1
            continue
        entry = re.search(_SLEEP_ENTRY, message)
        if entry:
            pending = entry.group(1)
            continue
        wake = re.search(_ACPI_WAKE, message)
        if wake:
            pending = pending or ("deep" if wake.group(1) == "3" else "hibernate")
            continue
        for i, text in enumerate(_SLEEP_EXIT):
            if message.endswith(text):
                count += 1
                last = seconds
                last_kind = "hibernate" if i == 1 else pending
                pending = None
    return {"count": count, "last_seconds": last, "last_kind": last_kind, "refused": refused}


def group_events(records: list[tuple[Optional[float], str]], parse: Any, key: tuple[str, ...]) -> list[dict]:
    """The events `parse` finds in the records, one per distinct `key` (e.g. PCI address and code), in the
    order first seen: the last event's fields, with "events" (how many), "first" and "last" (seconds)."""
    groups: dict[tuple, dict] = {}
    for seconds, message in records:
        event = parse(message)
        if event is None:
            continue
        k = tuple(event[f] for f in key)
        group = groups.get(k)
        if group is None:
            group = groups[k] = {"events": 0, "first": seconds}
        group.update(event)
        group["events"] += 1
        group["last"] = seconds
    return list(groups.values())


def within(records: list[tuple[Optional[float], str]], uptime: Optional[float], since: Optional[float]):
    """The records of the last `since` seconds (all of them when `since` is None). A record without a time
    is kept, as is everything when the uptime is not known (the window cannot be placed)."""
    if since is None or uptime is None:
        return records
    start = uptime - since
    return [(s, m) for s, m in records if s is None or s >= start]


def parse_uptime(text: str) -> Optional[float]:
    """/proc/uptime's first number: seconds since boot."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


def command_failure(name: str, rc: Optional[int], stdout: str, stderr: str) -> Optional[tuple[str, str]]:
    """(reason, detail) when dmesg's or journalctl's answer is not the kernel log, else None."""
    said = " ".join(stderr.split())[:200]
    if name == "journalctl" and "not seeing messages from other users and the system" in stderr:
        return NO_PERMISSION, "journalctl -k: not in the adm or systemd-journal group"
    if rc != 0:
        if "Operation not permitted" in stderr or "Permission denied" in stderr:
            return NO_PERMISSION, f"{name}: {said}"
        return "failed", f"{name} exited with status {rc}" + (f": {said}" if said else "")
    if not stdout.strip() or "No journal files were found" in stderr:
        return "empty", f"{name} printed no kernel messages" + (f" ({said})" if said else "")
    return None


# --- the probe -----------------------------------------------------------------------------------------


def read_log(host: Any) -> tuple[Optional[str], list[tuple[Optional[float], str]], list[tuple[str, str]]]:
    """(the way that answered, its records, what each earlier way answered as (reason, detail))."""
    tried: list[tuple[str, str]] = []
    try:
        return KMSG, parse_kmsg(host.read(KMSG)), tried
    except HostError as e:
        tried.append((e.reason, f"{KMSG}: {e.reason}"))
    for argv, parse in ((DMESG, parse_dmesg), (JOURNAL, parse_journal)):
        try:
            result = host.run(argv, timeout=COMMAND_TIMEOUT)
        except HostError as e:
            reason = "not installed" if e.reason == NOT_FOUND else e.reason
            tried.append((reason, f"{argv[0]}: {reason}"))
            continue
        failure = command_failure(argv[0], result.rc, result.stdout, result.stderr)
        if failure is None:
            return " ".join(argv[:2]) if argv[0] == "journalctl" else argv[0], parse(result.stdout), tried
        tried.append(failure)
    return None, [], tried


def _reason(tried: list[tuple[str, str]]) -> str:
    reasons = [r for r, _ in tried]
    for reason in (NO_PERMISSION, "timed out"):
        if reason in reasons:
            return reason
    return reasons[-1] if reasons else "not read"


def probe(host: Any, since: Optional[float] = None) -> dict[str, Fact]:
    src = "kernel log"
    way, records, tried = read_log(host)
    facts: dict[str, Fact] = {
        "kernel_log.window": known(f"last {since:g} s" if since else "since boot", "check --since"),
    }
    if way is None:
        reason = _reason(tried)
        detail = "; ".join(d for _, d in tried)
        restrict = _read_or_none(host, DMESG_RESTRICT)
        if reason == NO_PERMISSION:
            if restrict is not None and restrict.strip() == "1":
                detail += "; kernel.dmesg_restrict=1"
            detail += f". To read it: {ACCESS}"
        # A snapshot recorded before gpudoctor read the kernel log: not a finding about this host, unknown.
        recorded = not all(r == NOT_RECORDED for r, _ in tried)
        facts.update({
            "kernel_log.status": known(reason, src) if recorded else unknown(reason, src),
            "kernel_log.error": known(detail, src) if recorded else unknown(reason, src),
            "kernel_log.source": unknown(reason, src),
            "kernel_log.lines": unknown(reason, src),
            "kernel_log.truncated": unknown(reason, src),
            "kernel_log.earliest_seconds": unknown(reason, src),
            "xid.count": unknown(f"the kernel log could not be read: {reason}", src),
            "sxid.count": unknown(f"the kernel log could not be read: {reason}", src),
            "suspend.count": unknown(f"the kernel log could not be read: {reason}", src),
            "suspend.refused": unknown(f"the kernel log could not be read: {reason}", src),
        })  # fmt: skip
        return facts
    truncated = len(records) > MAX_LINES
    records = records[-MAX_LINES:]
    uptime = parse_uptime(_read_or_none(host, UPTIME) or "")
    stamps = [s for s, _ in records if s is not None]
    src = way
    facts.update({
        "kernel_log.status": known("ok", src),
        "kernel_log.error": known("", src),
        "kernel_log.source": known(way, src),
        "kernel_log.lines": known(len(records), src),
        "kernel_log.truncated": known(truncated, src),
        "kernel_log.earliest_seconds": (
            known(round(min(stamps), 3), src) if stamps else unknown("no timestamps", src)
        ),
    })  # fmt: skip
    facts.update(_suspend_facts(sleeps(records), uptime, min(stamps) if stamps else None, truncated, src))
    records = within(records, uptime, since)
    xids = group_events(records, parse_xid, ("pci", "code"))
    sxids = group_events(records, parse_sxid, ("device", "code"))
    facts.update(list_facts("xid", [_xid_member(e, uptime, src) for e in xids], src))
    facts.update(list_facts("sxid", [_sxid_member(e, uptime, src) for e in sxids], src))
    return facts


BOOT_REACH = 60.0  # seconds: a log whose oldest line is later than this no longer shows the whole boot


def _suspend_facts(
    seen: dict[str, Any], uptime: Optional[float], earliest: Optional[float], truncated: bool, src: str
) -> dict[str, Fact]:
    """suspend.*: since boot, not the --since window. No sleep seen in a log that lost its start is not
    "none": the count is unknown then."""
    lost = truncated or earliest is None or earliest > BOOT_REACH
    facts = {"suspend.refused": known(seen["refused"], src)}
    if seen["count"] == 0:
        why = f"the kernel log no longer reaches back to boot (oldest line at {earliest} s)" if lost else ""
        facts["suspend.count"] = unknown(why, src) if lost else known(0, src)
        for name in ("last_kind", "last_seconds", "last_age_seconds"):
            facts[f"suspend.{name}"] = unknown(why or "no sleep since boot", src)
        return facts
    last = seen["last_seconds"]
    age = None if last is None or uptime is None else round(max(0.0, uptime - last), 1)
    facts.update({
        "suspend.count": known(seen["count"], src),
        "suspend.last_kind": _opt(seen["last_kind"], src, "the log does not say which sleep"),
        "suspend.last_seconds": _opt(last, src, "the line has no timestamp"),
        "suspend.last_age_seconds": _opt(age, src, "no timestamp or no /proc/uptime"),
    })  # fmt: skip
    return facts


def _read_or_none(host: Any, path: str) -> Optional[str]:
    try:
        return host.read(path)
    except HostError:
        return None


def _opt(value: Any, src: str, why: str) -> Fact:
    return known(value, src) if value is not None else unknown(why, src)


def _times(e: dict, uptime: Optional[float], src: str) -> dict[str, Fact]:
    last = e.get("last")
    age = None if last is None or uptime is None else round(max(0.0, uptime - last), 1)
    return {
        "events": known(e["events"], src),
        "first_seconds": _opt(e.get("first"), src, "the line has no timestamp"),
        "last_seconds": _opt(last, src, "the line has no timestamp"),
        "age_seconds": _opt(age, src, "no timestamp or no /proc/uptime"),
    }


def _xid_member(e: dict, uptime: Optional[float], src: str) -> dict[str, Fact]:
    return {
        "code": known(e["code"], src),
        "pci": _opt(e["pci"], src, "the line names no PCI address"),
        "pid": _opt(e["pid"], src, "the line names no process"),
        "process": _opt(e["process"], src, "the line names no process"),
        "text": known(e["text"], src),
        **_times(e, uptime, src),
    }


def _sxid_member(e: dict, uptime: Optional[float], src: str) -> dict[str, Fact]:
    return {
        "code": known(e["code"], src),
        "device": known(e["device"], src),
        "pci": _opt(e["pci"], src, "the line names no PCI address"),
        "fatal": _opt(e["fatal"], src, "the line says neither Fatal nor Non-fatal"),
        "text": known(e["text"], src),
        **_times(e, uptime, src),
    }
