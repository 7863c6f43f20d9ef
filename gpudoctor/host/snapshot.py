"""Snapshots: record what a live Host answered, and replay it anywhere.

A snapshot stores raw sources, never derived facts, so a parser fix re-diagnoses old snapshots correctly.
The format is documented in docs/snapshot-format.md. A snapshot is a .tar.gz, or the same tree unpacked
into a directory. Snapshots from strangers are data: members are size-capped, only regular files under
safe relative names are read, JSON is parsed with the standard library, nothing is extracted to disk.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..redact import Identity, Redactor
from .base import NOT_RECORDED, TIMED_OUT, CommandResult, HostError, NvmlError, SnapshotError, nvml_key

FORMAT = "gpudoctor-snapshot"
VERSION = 1
MAX_MEMBER = 64 * 1024 * 1024
MAX_TOTAL = 256 * 1024 * 1024
MAX_MEMBERS = 100_000
# The reason a read gives when its recorded answer has the wrong shape (a hand-edited or hostile snapshot):
# that one answer is unusable, the rest of the snapshot still is.
MALFORMED = "malformed snapshot entry"
JSON_PARTS = (
    "reads.json",
    "dirs.json",
    "commands.json",
    "nvml.json",
    "python.json",
    "env.json",
    "env_names.json",
    "runtime.json",
)


@dataclass
class Recording:
    """Everything one check read, in snapshot form."""

    files: dict[str, str] = field(default_factory=dict)  # path -> verbatim text
    read_errors: dict[str, str] = field(default_factory=dict)  # path -> reason
    dirs: dict[str, Any] = field(default_factory=dict)  # path -> [names] | {"error": reason}
    commands: list[dict] = field(
        default_factory=list
    )  # {"argv", "rc", "stdout", "stderr"} | {"argv", "error"}
    nvml_system: dict[str, Any] = field(default_factory=dict)  # key -> value | {"error": name, "msg": ...}
    nvml_devices: dict[str, dict[str, Any]] = field(default_factory=dict)  # "0" -> {key -> value}
    # "default" -> path; "targets" -> [[path, what chose it], ...]; path -> dump | {"error": ...}
    python: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Optional[str]] = field(default_factory=dict)
    env_names: dict[str, list[str]] = field(default_factory=dict)  # prefix -> the names it starts
    # check --deep: {"cuda_smoke": ANSWER, "frameworks": {interpreter: {framework: ANSWER}}, "cuda_binaries":
    # {interpreter: ANSWER}}, where ANSWER is the child's {"rc", "stdout", "stderr"} or {"error": reason,
    # "detail": ...}
    runtime: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


class RecordingHost:
    """Wraps a Host and records every answer (and every failure) it gives."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.recording = Recording()

    def __getattr__(self, name: str) -> Any:  # timed_out, deadline, target_python of the live host
        return getattr(self.inner, name)

    def read(self, path: str) -> str:
        try:
            text = self.inner.read(path)
        except HostError as e:
            self.recording.read_errors[path] = e.reason
            raise
        self.recording.files[path] = text
        return text

    def listdir(self, path: str) -> list[str]:
        try:
            names = self.inner.listdir(path)
        except HostError as e:
            self.recording.dirs[path] = {"error": e.reason}
            raise
        self.recording.dirs[path] = list(names)
        return names

    def run(self, argv: tuple[str, ...], timeout: float = 2.0) -> CommandResult:
        try:
            result = self.inner.run(argv, timeout)
        except HostError as e:
            self._add_command({"argv": list(argv), "error": e.reason, "detail": e.detail})
            raise
        self._add_command(
            {"argv": list(argv), "rc": result.rc, "stdout": result.stdout, "stderr": result.stderr}
        )
        return result

    def _add_command(self, entry: dict) -> None:
        if not any(c["argv"] == entry["argv"] for c in self.recording.commands):
            self.recording.commands.append(entry)

    def nvml(self, function: str, device: Optional[int] = None, arg: Optional[str] = None) -> Any:
        table = (
            self.recording.nvml_system
            if device is None
            else self.recording.nvml_devices.setdefault(str(device), {})
        )
        key = nvml_key(function, arg)
        try:
            value = self.inner.nvml(function, device, arg)
        except NvmlError as e:
            table[key] = {"error": e.name, "msg": e.detail}
            raise
        table[key] = value
        return value

    def python_targets(self) -> list[tuple[str, str]]:
        targets = self.inner.python_targets()
        self.recording.python["targets"] = [list(t) for t in targets]
        if targets:
            self.recording.python.setdefault("default", targets[0][0])
        return targets

    def python(self, interpreter: Optional[str] = None) -> dict:
        target = interpreter or self.inner.target_python()
        self.recording.python.setdefault("default", target)
        try:
            data = self.inner.python(target)
        except HostError as e:
            self.recording.python[target] = {"error": e.reason, "detail": e.detail}
            raise
        self.recording.python[target] = data
        return data

    def env(self, name: str) -> Optional[str]:
        value = self.inner.env(name)
        self.recording.env[name] = value
        return value

    def env_names(self, prefix: str) -> list[str]:
        names = self.inner.env_names(prefix)
        self.recording.env_names[prefix] = list(names)
        return names

    def cuda_smoke(self, timeout: float = 10.0) -> dict:
        try:
            answer = self.inner.cuda_smoke(timeout)
        except HostError as e:
            self.recording.runtime["cuda_smoke"] = {"error": e.reason, "detail": e.detail}
            raise
        self.recording.runtime["cuda_smoke"] = dict(answer)
        return answer

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict:
        table = self.recording.runtime.setdefault("frameworks", {}).setdefault(interpreter, {})
        return _kept(table, framework, lambda: self.inner.framework_runtime(interpreter, framework, timeout))

    def cuda_binaries(self, interpreter: str, directories: Sequence[str], timeout: float = 15.0) -> dict:
        table = self.recording.runtime.setdefault("cuda_binaries", {})
        return _kept(table, interpreter, lambda: self.inner.cuda_binaries(interpreter, directories, timeout))


def _kept(table: dict, key: str, ask: Callable[[], dict]) -> dict:
    """ask()'s answer, recorded in table[key]; a HostError recorded as such, and raised again."""
    try:
        answer = ask()
    except HostError as e:
        table[key] = {"error": e.reason, "detail": e.detail}
        raise
    table[key] = dict(answer)
    return answer


class SnapshotHost:
    """Answers as the recorded host did; what was never recorded is unknown ("not recorded")."""

    kind = "snapshot"

    def __init__(self, recording: Recording, source: str = "") -> None:
        self.rec = recording
        self.source = source
        self.timed_out: list[str] = []

    # Every answer has the shape a live Host gives (str, list of str, CommandResult of str), whatever the
    # snapshot's JSON holds; an entry of another shape fails that one read with MALFORMED.

    def read(self, path: str) -> str:
        if path in self.rec.files:
            return self.rec.files[path]
        reason = self.rec.read_errors.get(path, NOT_RECORDED)
        raise HostError(reason if isinstance(reason, str) and reason else MALFORMED, path)

    def listdir(self, path: str) -> list[str]:
        entry = self.rec.dirs.get(path)
        if entry is None:
            raise HostError(NOT_RECORDED, path)
        if isinstance(entry, dict) and isinstance(entry.get("error"), str) and entry["error"]:
            raise HostError(entry["error"], path)
        if not isinstance(entry, list) or not all(isinstance(n, str) for n in entry):
            raise HostError(MALFORMED, path)
        return list(entry)

    def run(self, argv: tuple[str, ...], timeout: float = 2.0) -> CommandResult:
        for cmd in self.rec.commands:
            if cmd.get("argv") != list(argv):
                continue
            if "error" in cmd:
                if cmd["error"] == "timed out":
                    self.timed_out.append(" ".join(argv))
                reason = cmd["error"] if isinstance(cmd["error"], str) and cmd["error"] else MALFORMED
                raise HostError(reason, str(cmd.get("detail", "")))
            rc, stdout, stderr = cmd.get("rc"), cmd.get("stdout", ""), cmd.get("stderr", "")
            if (rc is not None and (not isinstance(rc, int) or isinstance(rc, bool))) or not (
                isinstance(stdout, str) and isinstance(stderr, str)
            ):
                raise HostError(MALFORMED, " ".join(argv))
            return CommandResult(tuple(argv), rc, stdout, stderr)
        raise HostError(NOT_RECORDED, " ".join(argv))

    def nvml(self, function: str, device: Optional[int] = None, arg: Optional[str] = None) -> Any:
        table = self.rec.nvml_system if device is None else self.rec.nvml_devices.get(str(device), {})
        if not isinstance(table, dict):
            raise HostError(MALFORMED, f"nvml.json: device {device}")
        key = nvml_key(function, arg)
        if key not in table:
            raise NvmlError("NVMLError_NotRecorded", f"{key} was not recorded") from None
        value = table[key]
        if isinstance(value, dict) and set(value) <= {"error", "msg"} and "error" in value:
            if value["error"] == "NVMLError_Timeout":
                self.timed_out.append(f"NVML {function}")
            raise NvmlError(str(value["error"]), str(value.get("msg", "")))
        return value

    def python_targets(self) -> list[tuple[str, str]]:
        """As recorded; a snapshot from before "targets" was recorded names only its default ("")."""
        targets = self.rec.python.get("targets")
        if isinstance(targets, list) and targets:
            good = [(t[0], t[1]) for t in targets if isinstance(t, list) and len(t) == 2]
            if len(good) == len(targets) and all(isinstance(x, str) for t in good for x in t):
                return good
        return [(str(self.rec.python.get("default", "")), "")]

    def inspect_python_early(self) -> None:
        """Nothing to start: the inspection was recorded."""

    def target_python(self) -> str:
        return self.python_targets()[0][0]

    def python(self, interpreter: Optional[str] = None) -> dict:
        target = interpreter or self.target_python()
        data = self.rec.python.get(target)
        if not isinstance(data, dict):
            raise HostError(NOT_RECORDED, f"python {target}")
        if "error" in data and "format" not in data:
            raise HostError(str(data["error"]), str(data.get("detail", "")))
        return data

    def env(self, name: str) -> Optional[str]:
        """The recorded value (None: it was unset); HostError NOT_RECORDED for a variable the snapshot did
        not read, which an unset one must not be taken for."""
        if name not in self.rec.env:
            raise HostError(NOT_RECORDED, f"environment variable {name}")
        value = self.rec.env.get(name)
        return value if isinstance(value, str) else None

    def env_names(self, prefix: str) -> list[str]:
        """The recorded names; HostError NOT_RECORDED for a family the snapshot did not list (older
        snapshots), MALFORMED for a listing that is not a list of names."""
        if prefix not in self.rec.env_names:
            raise HostError(NOT_RECORDED, f"environment variables {prefix}*")
        names = self.rec.env_names[prefix]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise HostError(MALFORMED, f"environment variables {prefix}*")
        return sorted(n for n in names if n.startswith(prefix))

    def cuda_smoke(self, timeout: float = 10.0) -> dict:
        return self._runtime_answer(self.rec.runtime.get("cuda_smoke"), "libcuda smoke test")

    def framework_runtime(self, interpreter: str, framework: str, timeout: float = 20.0) -> dict:
        by_interpreter = self.rec.runtime.get("frameworks")
        table = by_interpreter.get(interpreter) if isinstance(by_interpreter, dict) else None
        answer = table.get(framework) if isinstance(table, dict) else None
        return self._runtime_answer(answer, f"{framework} import in {interpreter}")

    def cuda_binaries(self, interpreter: str, directories: Sequence[str], timeout: float = 15.0) -> dict:
        """As recorded for `interpreter` (the directories it scanned are the recorded inspection's)."""
        table = self.rec.runtime.get("cuda_binaries")
        answer = table.get(interpreter) if isinstance(table, dict) else None
        return self._runtime_answer(answer, f"CUDA extension scan in {interpreter}")

    def _runtime_answer(self, answer: Any, label: str) -> dict:
        """A recorded child's {"rc", "stdout", "stderr"}, or the HostError it was recorded with."""
        if answer is None:
            raise HostError(NOT_RECORDED, label)
        if isinstance(answer, dict) and "error" in answer:
            reason = answer["error"] if isinstance(answer["error"], str) and answer["error"] else MALFORMED
            if reason == TIMED_OUT and label not in self.timed_out:  # once, as the live Host names it
                self.timed_out.append(label)
            raise HostError(reason, str(answer.get("detail", "")))
        if not isinstance(answer, dict):
            raise HostError(MALFORMED, label)
        rc, stdout, stderr = answer.get("rc"), answer.get("stdout", ""), answer.get("stderr", "")
        if (rc is not None and (not isinstance(rc, int) or isinstance(rc, bool))) or not (
            isinstance(stdout, str) and isinstance(stderr, str)
        ):
            raise HostError(MALFORMED, label)
        return {"rc": rc, "stdout": stdout, "stderr": stderr}


# --- redaction -----------------------------------------------------------------------------------------


def redact(rec: Recording, hostnames: tuple[str, ...] = (), identity: Optional[Identity] = None) -> Recording:
    """Replace GPU/MIG UUIDs, NVLink fabric cluster UUIDs, serial numbers, the hostname, home directories and
    user names and secrets in URLs everywhere in a recording, consistently (gpudoctor/redact.py says how, and
    cluster_uuids), so that it still replays.
    `identity` is what to redact besides what the recording itself names (the hostname files, the serials):
    gpudoctor snapshot passes this machine's (redact.this_machine())."""
    identity = identity or Identity()
    serials: dict[str, str] = {}
    for dev in sorted(rec.nvml_devices, key=lambda k: int(k) if k.isdigit() else 0):
        serial = rec.nvml_devices[dev].get("nvmlDeviceGetSerial")
        if isinstance(serial, str) and serial.strip("0 ") and serial not in serials:
            serials[serial] = f"REDACTED-SERIAL-{dev}"
    names = set(hostnames) | set(identity.hostnames)
    for path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
        names.add(rec.files.get(path, "").strip())
    r = Redactor(Identity(tuple(sorted(names)), identity.homes, identity.users), serials)

    def listing(path: str, entry: Any) -> Any:
        if isinstance(entry, list):
            return [r.path(path, n) if isinstance(n, str) else r.value(n) for n in entry]
        return r.value(entry)

    files = {
        k: kernel_log_lines(v) if k == "/dev/kmsg" else listen_lines(v) if k in TCP_TABLES else v
        for k, v in rec.files.items()
    }
    commands = [_kernel_log_command(c) for c in rec.commands]
    return Recording(
        files={r.text(k): r.text(v) for k, v in files.items()},
        read_errors=r.value(rec.read_errors),
        dirs={r.text(k): listing(k, v) for k, v in rec.dirs.items()},
        commands=r.value(commands),
        nvml_system=r.value(rec.nvml_system),
        nvml_devices=r.value(cluster_uuids(rec.nvml_devices)),
        python=r.value(rec.python),
        env=r.value(rec.env),
        env_names=r.value(rec.env_names),
        runtime=r.value(rec.runtime),
        manifest=dict(rec.manifest, redacted=True),
    )


# NVML's fabric readings name the NVLink cluster a GPU belongs to by a 16-byte UUID (clusterUuid, a list of
# byte values once made plain), which identifies the machine's rack as a GPU UUID does the GPU.
FABRIC_INFO_CALLS = ("nvmlDeviceGetGpuFabricInfo", "nvmlDeviceGetGpuFabricInfoV")


def cluster_uuids(devices: dict[str, Any]) -> dict[str, Any]:
    """The NVML device readings with each distinct non-zero cluster UUID of a fabric reading replaced by 15
    zero bytes and its number (1, 2, ...) in order of first appearance, as GPU UUIDs are; all zeros (no
    cluster) stays as it is, and so does a UUID already in that form: redacting twice changes nothing."""
    numbers: dict[tuple, int] = {}
    out: dict[str, Any] = {}
    for dev in sorted(devices, key=lambda k: int(k) if k.isdigit() else 0):
        table = devices[dev]
        if not isinstance(table, dict):
            out[dev] = table
            continue
        out[dev] = {}
        for key, value in table.items():
            uuid = value.get("clusterUuid") if isinstance(value, dict) else None
            ints = isinstance(uuid, list) and all(isinstance(b, int) for b in uuid)
            if key.split("(")[0] in FABRIC_INFO_CALLS and ints and any(uuid[:15]):
                n = numbers.setdefault(tuple(uuid), len(numbers) + 1)
                value = dict(value, clusterUuid=[0] * 15 + [n])
            out[dev][key] = value
    return out


# The kernel log names disks, network addresses, USB serials and users' programs: a redacted snapshot keeps
# the text of the NVIDIA drivers' lines (NVRM, nvidia, nvidia-nvswitch, nvidia-modeset, ...) and of the
# kernel's "Linux version" line; every other line keeps only its record header or timestamp, its text
# replaced, so that the snapshot replays to the same line count and times. Process names in Xid lines
# (name=python3) are kept: they say which program faulted.
_KERNEL_LOG_KEEP = re.compile(r"NVRM|nvidia|Xid|SXid|Linux version", re.IGNORECASE)
_KERNEL_LOG_COMMANDS = ("dmesg", "journalctl")


_KERNEL_LOG_HEADER = re.compile(r"^(\d+,\d+,\d+,[^;]*;|\[\s*\d+(?:\.\d+)?\]\s?)")
KERNEL_LOG_REDACTED = "<redacted>"


def kernel_log_lines(text: str) -> str:
    """A kernel log (/dev/kmsg, dmesg, journalctl -k) as a redacted snapshot keeps it: the NVIDIA drivers'
    lines whole, the others as their header (a /dev/kmsg record's, a [seconds] stamp) and KERNEL_LOG_REDACTED;
    /dev/kmsg's continuation lines and journalctl's "-- ... --" notes, which are no records, are left out."""
    out = []
    for line in text.splitlines(keepends=True):
        if _KERNEL_LOG_KEEP.search(line):
            out.append(line)
        elif not line.startswith((" ", "-- ")):
            header = _KERNEL_LOG_HEADER.match(line)
            out.append((header.group(1) if header else "") + KERNEL_LOG_REDACTED + "\n")
    return "".join(out)


TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


def listen_lines(text: str) -> str:
    """A /proc/net/tcp or tcp6 table as a redacted snapshot keeps it: its header and the LISTEN sockets
    (state 0A) only, so that no peer address of an open connection leaves the machine."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[:1] + [line for line in lines[1:] if line.split()[3:4] == ["0A"]])


def _kernel_log_command(entry: Any) -> Any:
    argv = entry.get("argv") if isinstance(entry, dict) else None
    if (
        isinstance(argv, list)
        and argv
        and argv[0] in _KERNEL_LOG_COMMANDS
        and isinstance(entry.get("stdout"), str)
    ):
        return dict(entry, stdout=kernel_log_lines(entry["stdout"]))
    return entry


# --- save and load -------------------------------------------------------------------------------------


def _parts(rec: Recording) -> dict[str, Any]:
    return {
        "reads.json": {"errors": rec.read_errors},
        "dirs.json": rec.dirs,
        "commands.json": rec.commands,
        "nvml.json": {"system": rec.nvml_system, "devices": rec.nvml_devices},
        "python.json": rec.python,
        "env.json": rec.env,
        "env_names.json": rec.env_names,
        "runtime.json": rec.runtime,
    }


def save(rec: Recording, path: str, tool_version: str) -> None:
    """Write a recording as a .tar.gz snapshot."""
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpudoctor": tool_version,
        "redacted": bool(rec.manifest.get("redacted", False)),
    }
    members: list[tuple[str, bytes]] = [("manifest.json", _dump(manifest))]
    members += [(name, _dump(data)) for name, data in _parts(rec).items()]
    members += [
        ("files" + p, text.encode("utf-8")) for p, text in sorted(rec.files.items()) if p.startswith("/")
    ]
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))


def write_dir(rec: Recording, root: str, manifest: dict) -> None:
    """Write a recording unpacked into a directory (the form test fixtures are kept in)."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    (base / "manifest.json").write_bytes(_dump(manifest))
    for name, data in _parts(rec).items():
        (base / name).write_bytes(_dump(data))
    for p, text in rec.files.items():
        target = base / "files" / p.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def load(path: str) -> Recording:
    """Read a snapshot (.tar.gz or directory) into a Recording, or raise SnapshotError."""
    p = Path(path)
    if p.is_dir():
        members = _read_dir(p)
    elif p.is_file():
        members = _read_tar(p)
    else:
        raise SnapshotError(f"{path}: no such file or directory")
    return _from_members(members, path)


# A name or value from the OS that is not valid UTF-8 (a directory entry, an environment variable) reaches
# Python with each undecodable byte as a lone surrogate, U+DC80-U+DCFF (PEP 383, "surrogateescape").
# UTF-8 cannot carry those, so the JSON writes each as its escape (byte 0xFF is \udcff), which JSON
# allows and which reads back as the same string: replayed, the name is the one the live Host gave.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _dump(data: Any) -> bytes:
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def _safe_name(name: str) -> bool:
    return bool(name) and not name.startswith("/") and ".." not in name.split("/") and "\\" not in name


def _read_dir(root: Path) -> dict[str, bytes]:
    members: dict[str, bytes] = {}
    total = 0
    try:
        for f in sorted(root.rglob("*")):
            if f.is_symlink() or not f.is_file():
                continue
            size = f.stat().st_size
            total += size
            if size > MAX_MEMBER or total > MAX_TOTAL or len(members) >= MAX_MEMBERS:
                raise SnapshotError(f"{root}: snapshot is larger than gpudoctor reads")
            members[f.relative_to(root).as_posix()] = f.read_bytes()
    except OSError as e:
        raise SnapshotError(f"{root}: cannot read the snapshot ({e})") from e
    return members


def _read_tar(path: Path) -> dict[str, bytes]:
    members: dict[str, bytes] = {}
    total = 0
    seen = 0
    try:
        with tarfile.open(path, "r:*") as tar:
            for info in tar:
                seen += 1  # every header counts: a million directory entries is a bomb too
                if seen > MAX_MEMBERS:
                    raise SnapshotError(f"{path}: too many members")
                if not info.isfile():
                    continue
                name = info.name[2:] if info.name.startswith("./") else info.name
                if not _safe_name(name):
                    raise SnapshotError(f"{path}: unsafe member name {info.name!r}")
                if info.size > MAX_MEMBER:
                    raise SnapshotError(f"{path}: member {name} is larger than {MAX_MEMBER} bytes")
                total += info.size
                if total > MAX_TOTAL:
                    raise SnapshotError(f"{path}: snapshot unpacks to more than {MAX_TOTAL} bytes")
                stream = tar.extractfile(info)
                members[name] = stream.read(MAX_MEMBER + 1) if stream else b""
    except (tarfile.TarError, OSError, EOFError, ValueError) as e:
        raise SnapshotError(f"{path}: not a readable snapshot ({e})") from e
    return members


def _from_members(members: dict[str, bytes], source: str) -> Recording:
    def part(name: str, default: Any) -> Any:
        raw = members.get(name)
        if raw is None:
            return default
        try:
            return json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise SnapshotError(f"{source}: {name} is not valid JSON ({e})") from e

    manifest = part("manifest.json", None)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SnapshotError(
            f"{source}: not a gpudoctor snapshot (manifest.json missing or of another format)"
        )
    if manifest.get("version") != VERSION:
        raise SnapshotError(
            f"{source}: snapshot format version {manifest.get('version')!r}; this gpudoctor reads {VERSION}"
        )
    reads = _expect(part("reads.json", {}), dict, "reads.json", source)
    nvml = _expect(part("nvml.json", {}), dict, "nvml.json", source)
    rec = Recording(
        files={
            "/" + name[len("files/") :]: data.decode("utf-8", errors="replace")
            for name, data in members.items()
            if name.startswith("files/")
        },
        read_errors=_expect(reads.get("errors", {}), dict, "reads.json", source),
        dirs=_expect(part("dirs.json", {}), dict, "dirs.json", source),
        commands=_expect(part("commands.json", []), list, "commands.json", source),
        nvml_system=_expect(nvml.get("system", {}), dict, "nvml.json", source),
        nvml_devices=_expect(nvml.get("devices", {}), dict, "nvml.json", source),
        python=_expect(part("python.json", {}), dict, "python.json", source),
        env=_expect(part("env.json", {}), dict, "env.json", source),
        env_names=_expect(part("env_names.json", {}), dict, "env_names.json", source),  # absent: older
        runtime=_expect(part("runtime.json", {}), dict, "runtime.json", source),  # absent before --deep
        manifest=manifest,
    )
    if not all(isinstance(c, dict) for c in rec.commands):
        raise SnapshotError(f"{source}: commands.json must be a list of objects")
    return rec


def _expect(value: Any, kind: type, name: str, source: str) -> Any:
    if not isinstance(value, kind):
        raise SnapshotError(f"{source}: {name} has the wrong shape (expected a JSON {kind.__name__})")
    return value
