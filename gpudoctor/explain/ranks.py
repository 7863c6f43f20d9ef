"""Several rank logs of one job read into events: which rank (and node) said what, and when.

Where the logs are: files, directories (every file under them, sorted) and globs (expanded here, sorted, so
a quoted `'logs/*.out'` works as an unquoted one). Which rank a line is of, the first that says:

1. the line's own prefix: torch's `[rank3]:`, Open MPI's `[1,3]<stdout>:`, Slurm `srun --label`'s `3: `
   (global ranks); torchrun's `--tee` prefix `[default3]:` (a local rank, of that file's node);
2. the file's path: Slurm's `%t` (`slurm-123-3.out`, `slurm-123_4-3.out`: the task, a global rank), a file
   named `rank3.log` / `rank_3.txt`, torchrun's `--log-dir` layout `.../attempt_0/3/stderr.log` (the
   directory is the worker's local rank: torch/distributed/elastic/multiprocessing/api.py, DefaultLogsSpecs);
3. the message itself, where nothing above names one: torch's `[E ProcessGroupNCCL.cpp:737] [Rank 2]
   Watchdog caught ...` (torch before 2.2 had no `[rank2]:` prefix), `... was aborted on rank 2`;
4. else the file itself stands for one process of unknown rank.

A line's time is the first timestamp in its head: ISO 8601 and Python logging's `2024-01-05 10:02:03,123`
(also NCCL's `[%F %T]` and torchrun's `2025-05-24_03:42:44`), torch's glog prefix `[E1205 10:02:03.123456`
(no year), syslog's `Dec  5 10:02:03`. A line without one has the time of the last line before it in its
file that had one ("at or after"). The node is the host of NCCL's prefix `host:pid:tid [dev]` (or of a
`[host:pid=N] NCCL` one).

Only the lines the explain gate lets through and the matcher matches, and the lines that name another
rank's failure (explain/triage.py's WAITING and NETWORK), become events: reading stays at the explain
gate's speed. Pure but for reading the files: text in, events out.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

MAX_EVENTS = 40  # events kept for each process; the rest only counted
HEAD = 96  # how far into a line a timestamp or a rank prefix is looked for
BACK = 400  # lines looked back for the time of a line without one

GLOBAL_PREFIX = re.compile(r"\[rank(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>:|^\s{0,4}(\d{1,6}): ")
SAID_RANK = re.compile(r"^\[[EWIF][^\]]*\] \[(?:PG \d+ )?Rank (\d+)\] |was aborted on rank (\d+)\b")
LOCAL_PREFIX = re.compile(r"^\[default(\d+)\]:")
# Any of those prefixes, and what stands before it: what body_of() cuts off.
BODY = re.compile(r"^.*?(?:\[rank\d+\]:|\[default\d+\]:|<std(?:out|err)>:|^\s{0,4}\d{1,6}: )")
SLURM_TASK = re.compile(r"slurm-\d+(?:_\d+)?-(\d+)\.(?:out|err|log)$")
RANK_FILE = re.compile(r"(?:^|[-_.])rank[-_]?(\d+)(?:\.\w+)*$", re.IGNORECASE)
TORCHRUN = re.compile(r"attempt_\d+[/\\](\d+)[/\\](?:stdout|stderr|error)\.(?:log|json)$")
NCCL_HOST = re.compile(r"(?:^|[\s\]:>])([A-Za-z][\w.-]*):(\d+):(\d+) \[(\d+)\] ")
# a site's own NCCL log format, `[0604/1024][2025-02-16 22:31:34,422] [misc/socket.cc:586]
# [s12gn3064:pid=3942408] NCCL WARN ...` (NVIDIA/nccl#1618)
PID_HOST = re.compile(r"\[([A-Za-z][\w.-]*):pid=\d+\] NCCL ")

ISO = re.compile(r"(?<!\d)(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?")
GLOG = re.compile(r"(?<![A-Za-z0-9])[EWIF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})")
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
SYSLOG = re.compile(r"(?<![A-Za-z])(" + "|".join(MONTHS) + r") +(\d{1,2}) (\d\d):(\d\d):(\d\d)")
LOG_SUFFIXES = (".log", ".out", ".err", ".txt")


class SourceError(ValueError):
    """A --log that names nothing readable: the message says which and why."""


@dataclass(frozen=True)
class Stamp:
    """A time read from a line: the year is None where the format has none (glog, syslog)."""

    year: Optional[int]
    month: int
    day: int
    seconds: float  # since midnight

    def text(self) -> str:
        h, rest = divmod(self.seconds, 3600)
        m, s = divmod(rest, 60)
        day = f"{self.year:04d}-" if self.year else ""
        return f"{day}{self.month:02d}-{self.day:02d} {int(h):02d}:{int(m):02d}:{s:09.6f}"

    def key(self, year: int) -> float:
        """Seconds since the epoch, with `year` for a stamp that has none (to order it only)."""
        try:
            day = datetime(self.year or year, self.month, self.day)
        except ValueError:  # 29 February of a year taken for one without it
            day = datetime(self.year or year, self.month, 28)
        return day.timestamp() + self.seconds


def stamp(line: str) -> Optional[Stamp]:
    """The first timestamp in the head of `line`, or None."""
    head = line[:HEAD]
    found = []
    for regex in (ISO, GLOG, SYSLOG):
        m = regex.search(head)
        if m:
            found.append((m.start(), regex, m))
    if not found:
        return None
    _, regex, m = min(found, key=lambda f: f[0])
    if regex is ISO:
        y, mo, d, h, mi, s, frac = m.groups()
        year: Optional[int] = int(y)
    elif regex is GLOG:
        mo, d, h, mi, s, frac = m.groups()
        year = None
    else:
        mon, d, h, mi, s = m.groups()
        mo, frac, year = str(MONTHS.index(mon) + 1), None, None
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31):
        return None
    seconds = int(h) * 3600 + int(mi) * 60 + int(s) + (float("0." + frac) if frac else 0.0)
    return Stamp(year, int(mo), int(d), seconds)


def said_rank(line: str) -> Optional[int]:
    """The rank a line without a rank prefix names in its message: torch's `[Rank 2] Watchdog caught ...`
    (before torch 2.2 printed the `[rank2]:` prefix), `NCCL communicator was aborted on rank 2`."""
    m = SAID_RANK.search(line)
    return int(m.group(1) or m.group(2)) if m else None


def line_rank(line: str) -> tuple[Optional[int], Optional[int]]:
    """(global rank, local rank) a line's own prefix names; None for what it does not name."""
    m = GLOBAL_PREFIX.search(line[:HEAD])
    if m and (m.group(1) or m.group(2) or m.start() == 0):
        return int(next(g for g in m.groups() if g is not None)), None
    m = LOCAL_PREFIX.match(line)
    return (None, int(m.group(1))) if m else (None, None)


def body_of(line: str) -> str:
    """The line without its rank prefix (and what stands before it), stripped."""
    m = BODY.match(line[:HEAD])
    return line[m.end() :].strip() if m else line.strip()


def path_rank(path: str) -> tuple[Optional[int], Optional[int]]:
    """(global rank, local rank) a log file's path names."""
    name = os.path.basename(path)
    m = SLURM_TASK.search(name) or RANK_FILE.search(name)
    if m:
        return int(m.group(1)), None
    m = TORCHRUN.search(path)
    return (None, int(m.group(1))) if m else (None, None)


def host_of(line: str) -> Optional[str]:
    """The node a line names in NCCL's prefix `host:pid:tid [dev]` (or `[host:pid=N] NCCL`)."""
    head = line[: HEAD + 64]
    m = NCCL_HOST.search(head) or PID_HOST.search(head)
    return m.group(1) if m else None


def expand(paths: Sequence[str]) -> list[str]:
    """The log files that `paths` name, each once, in order: a directory as the files under it (those named
    *.log, *.out, *.err or *.txt, else all), a glob as what it matches; sorted. SourceError where one names
    nothing."""
    files: list[str] = []
    for path in paths:
        if path == "-":
            if len(paths) > 1:
                raise SourceError("--log -: standard input is read alone, not with other logs")
            return ["-"]
        if os.path.isdir(path):
            found = []
            for top, dirs, names in os.walk(path):
                dirs.sort()
                found += [os.path.join(top, n) for n in sorted(names)]
            logs = [f for f in found if f.endswith(LOG_SUFFIXES)] or found
            if not logs:
                raise SourceError(f"--log {path}: an empty directory")
            files += logs
        elif os.path.exists(path):
            files.append(path)
        elif glob.has_magic(path):
            matched = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
            if not matched:
                raise SourceError(f"--log {path}: the pattern matches no file")
            files += matched
        else:
            raise SourceError(f"--log {path}: no such file or directory")
    return list(dict.fromkeys(files))


@dataclass
class Event:
    """A line that says something about the job's failure."""

    file: str
    line_no: int  # 1-based, in its file
    text: str
    role: Any  # triage.Role
    stamp: Optional[Stamp]
    stamp_own: bool  # the line carries its time itself (else: the time of a line before it)
    rank: Optional[int]
    local_rank: Optional[int]
    host: Optional[str]


@dataclass
class Process:
    """The events of one rank (or one file of unknown rank), in the order of its logs."""

    key: str  # "rank 3", "local rank 2 of logs/node1", "logs/agent.log"
    rank: Optional[int]
    local_rank: Optional[int]
    files: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    more: int = 0  # events past MAX_EVENTS, counted only

    @property
    def host(self) -> Optional[str]:
        return self.hosts[0] if self.hosts else None


@dataclass
class Read:
    files: list[tuple[str, int]]  # each file and how many lines it has
    processes: list[Process]


def read(paths: Sequence[str], classify: Any, blocks: Any) -> Read:
    """The events of the logs at `paths` (already expanded), by process. `classify(line)`: the line's
    triage.Role or None (triage.Classifier); `blocks(path)`: the file's lines, a list at a time
    (logfile.blocks)."""
    processes: dict[str, Process] = {}
    counted = []
    for path in paths:
        counted.append((path, _read_file(path, classify, blocks(path), processes)))
    return Read(counted, _merged(list(processes.values())))


def _key(path: str, rank: Optional[int], local: Optional[int]) -> str:
    if rank is not None:
        return f"rank {rank}"
    if local is not None:
        return f"local rank {local} of {os.path.dirname(os.path.dirname(path)) or '.'}"
    return path


def _process(processes: dict[str, Process], key: str, rank: Optional[int], local: Optional[int]) -> Process:
    p = processes.get(key)
    if p is None:
        p = processes[key] = Process(key, rank, local)
    return p


def _read_file(path: str, classify: Any, blocks: Iterable[list[str]], processes: dict[str, Process]) -> int:
    file_rank, file_local = path_rank(path)
    hosts: set[str] = set()
    last: Optional[Stamp] = None
    first = 0
    keyed: dict[tuple[Optional[int], Optional[int]], Process] = {}
    for block in blocks:
        for at, role in classify.lines(block):
            line = block[at]
            rank, local = line_rank(line)
            if rank is None and local is None:
                rank, local = file_rank, file_local
            if rank is None and local is None:
                rank = said_rank(line)
            own = stamp(line)
            when = own or _before(block, at) or last
            host = host_of(line)
            key = (rank, local)
            p = keyed.get(key)
            if p is None:
                p = keyed[key] = _process(processes, _key(path, rank, local), rank, local)
            if path not in p.files:
                p.files.append(path)
            if host and host not in p.hosts:
                p.hosts.append(host)
            if len(p.events) >= MAX_EVENTS:
                p.more += 1
                continue
            p.events.append(
                Event(path, first + at + 1, line.strip(), role, when, own is not None, rank, local, host)
            )
        last = _before(block, len(block)) or last
        if len(hosts) < 2:
            hosts |= {h for h in map(host_of, block[:: max(1, len(block) // 64)]) if h}
        first += len(block)
    if len(hosts) == 1:  # one node in the file: its processes without a host of their own are on it
        for p in keyed.values():
            if not p.hosts:
                p.hosts.append(next(iter(hosts)))
    if not keyed:  # a file without events still shows as a process (a rank that logged no error)
        p = _process(processes, _key(path, file_rank, file_local), file_rank, file_local)
        p.files.append(path)
        if len(hosts) == 1:
            p.hosts.append(next(iter(hosts)))
    return first


def _before(block: Sequence[str], at: int) -> Optional[Stamp]:
    for i in range(at - 1, max(-1, at - 1 - BACK), -1):
        s = stamp(block[i])
        if s is not None:
            return s
    return None


def _merged(processes: list[Process]) -> list[Process]:
    """A file's events of unknown rank go to the one rank the same file's prefixed lines name (the lines of
    a traceback after `[rank3]:` lines, where only some lines carry the prefix)."""
    by_file: dict[str, set[str]] = {}
    for p in processes:
        if p.rank is not None:
            for f in p.files:
                by_file.setdefault(f, set()).add(p.key)
    keep = []
    index = {p.key: p for p in processes}
    for p in processes:
        if p.rank is None and p.local_rank is None and len(p.files) == 1:
            owners = by_file.get(p.files[0], set())
            if len(owners) == 1:
                owner = index[next(iter(owners))]
                owner.events = sorted(owner.events + p.events, key=lambda e: (e.file, e.line_no))[:MAX_EVENTS]
                owner.hosts += [h for h in p.hosts if h not in owner.hosts]
                continue
        keep.append(p)
    return keep
