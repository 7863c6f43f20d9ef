"""Which rank failed first, and why: the rank logs' events (explain/ranks.py) ordered, the other ranks folded.

Each event line has a role, what it says about the job:

- **cause** (tier 0): the explain matcher matches it confidently with a cause other than the watchdog
  timeout itself (GD-EXPLAIN-007): CUDA out of memory, an Xid (a kernel log line in the rank's log), an
  illegal memory access, an RDMA port error; or it names a crash or a NaN check no rule lists (SIGNS);
- **network** (tier 1): the connection to another rank broke (`Connection reset by peer`, `Connection
  closed by remote peer`, `Broken pipe`, NCCL's socket timeouts `Call to recv ... failed : Connection timed
  out`, `NET/Socket : socket progress error`, `socketPollConnect ... no POLLOUT events`, `No route to host`):
  what a rank sees when a peer dies, or a network fault;
- **waiting** (tier 2): this rank timed out or was aborted because another did not answer: the watchdog's
  timeout, `NCCL communicator was aborted`, `Some NCCL operations have failed or timed out`, torchrun
  stopping the workers or its `ChildFailedError` summary.

A rank's lead is its first cause or network event that comes before it started waiting (a crash after its
own timeout is the timeout's consequence). The first failure is, of the ranks with a lead: the earliest
where every lead has a time; else the lowest tier (a cause before a network error), then the earliest, then
the order met. Every other rank that logged an event is folded into "waiting for rank K". Where no rank has
a lead (every rank timed out) no rank is named: the ranks that logged nothing are listed, as those are the
ones to look at; a node report (check --format json) with an Xid or a port down on one of the job's nodes
then names that node.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from .ranks import Event, Process, Read, body_of

WATCHDOG = "GD-EXPLAIN-007"
CAUSE, NETWORK, WAITING = 0, 1, 2
TIERS = ("cause", "network", "waiting")

# Lines that name another rank's failure, not their own; each seen in the thread cited.
WAITS = (
    # hiyouga/LlamaFactory#7396; pytorch/pytorch#118369
    (r"watchdog caught collective operation timeout|milliseconds before timing out", "watchdog timeout"),
    # hiyouga/LlamaFactory#8261; XPixelGroup/BasicSR#737; bcmi/GPSDiffusion-Object-Shadow-Generation-SDXL#23
    (
        r"some nccl operations have failed or timed out|detected by watchdog|timeout at nccl work",
        "watchdog timeout",
    ),
    # modelscope/ms-swift#6301: what torch 2.8's watchdog prints on the ranks whose timeout line the paste has
    # not (its flight recorder's dump, after the timeout): those ranks were waiting too, not silent
    (
        r"stack trace of the failed collective not found|first pg on this rank to signal dumping",
        "watchdog timeout",
    ),
    # lyulyul/shine-cluster#171
    (r"nccl communicator was aborted", "communicator aborted"),
    # modelscope/ms-swift#6301, #4340
    (r"closing signal sigterm|childfailederror", "stopped by torchrun"),
)
NETS = (
    # NVIDIA/nccl#963, NVIDIA/nccl#1920
    (r"connection reset by peer", "connection reset by peer"),
    # NVIDIA/nccl#1232, NVIDIA/nccl-tests#166, NVIDIA/nccl-tests#252
    (r"connection closed by (?:remote peer|localrank)", "connection closed by a peer"),
    # hiyouga/LlamaFactory#3698
    (r"socket timeout", "socket timeout"),
    # NCCL's own socket errors. NVIDIA/nccl#706: `Net : Call to recv from 100.96.188.199<41468> failed :
    # Connection timed out`, then `NET/Socket : socket progress error`; NVIDIA/nccl#1618: `socketPollConnect
    # poll() returned 1, no POLLOUT events` (a peer node dropping the TCP SYN: the connect timed out), `poll()
    # failed, ret 1, error Connection timed out`, `connect returned Connection timed out, retrying`
    (
        r"socket progress error|no pollout events|failed : connection timed out|error connection timed out"
        r"|connect returned connection timed out",
        "socket timeout",
    ),
    # NVIDIA/nccl#795: `Net : Call to recv from 10.200.84.247<58355> failed : Broken pipe`
    (r"failed : broken pipe", "connection closed by a peer"),
    # hiyouga/LlamaFactory#8045: `socketPollConnect: connect returned No route to host, retrying (34/34)`;
    # sgl-project/sglang#3820: `NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route
    # to host) errno 115(Operation now in progress)`
    (r"no route to host", "no route to host"),
    # NVIDIA/nccl#1235, NVIDIA/nccl-tests#166: after the peer's socket closed
    (r"socket recv failed while polling", "connection closed by a peer"),
)
# Causes that no rule or explain entry lists the text of.
SIGNS = (
    # modelscope/ms-swift#1506 (torchrun: exitcode -11); the kernel's own words for SIGSEGV
    (r"segmentation fault|sigsegv|signal 11 \(", "segmentation fault"),
    # Megatron-LM megatron/core/distributed/param_and_grad_buffer.py: "Rank {global_rank}: found NaN in local
    # grad norm in backward pass ..."; torch's anomaly mode: "Function 'MulBackward0' returned nan values in
    # its 0th output." (torch/csrc/autograd/engine.cpp); both read 2026-12-05
    (r"found nan in local grad norm|returned nan values in its", "NaN check"),
)
LOOK = re.compile("|".join(p for p, _ in WAITS + NETS + SIGNS))


@dataclass(frozen=True)
class Role:
    tier: int  # CAUSE, NETWORK or WAITING
    kind: str  # what it is, in a few words: the cause's title, "watchdog timeout", "socket timeout"
    cause: Optional[str] = None  # the rule or explain entry id that explains the line


class Classifier:
    """The role of each line of a block that has one: the matcher's confident causes (through the explain
    gate, as explain --log reads a log) and the lines WAITS, NETS and SIGNS name."""

    def __init__(self, matcher: Any) -> None:
        import re2

        from .gate import Gate

        self.matcher = matcher
        self.gate = Gate(matcher)
        self.seen: dict[str, Optional[Role]] = {}
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1  # as the gate: bytes, nothing a log holds fails it
        self.look = re2.compile(LOOK.pattern.encode(), options)

    def lines(self, block: Sequence[str]) -> Iterator[tuple[int, Role]]:
        from .gate import data_of, found_lines

        data = data_of(block)  # one lowercased copy of the block for both searches
        at = sorted(set(self.gate.lines_in(data)) | set(found_lines(self.look, data)))
        for i in at:
            role = self.role(block[i])
            if role is not None:
                yield i, role

    def role(self, line: str) -> Optional[Role]:
        body = body_of(line)  # the same text of two ranks is matched once
        if body in self.seen:
            return self.seen[body]
        low = body.lower()
        role = _named(low, SIGNS, CAUSE) or _named(low, NETS, NETWORK)
        if role is None:
            ranked = self.matcher.rank(body, limit=8) if self.matcher.may_be_confident(body) else []
            causes = [c for c in ranked if c.confident and c.known.id != WATCHDOG]
            if causes:
                role = Role(CAUSE, causes[0].known.title, causes[0].known.id)
            elif any(c.confident for c in ranked):
                role = Role(WAITING, "watchdog timeout", WATCHDOG)
        role = role or _named(low, WAITS, WAITING)
        if len(self.seen) < 100_000:
            self.seen[body] = role
        return role


def _named(low: str, table: tuple[tuple[str, str], ...], tier: int) -> Optional[Role]:
    for pattern, kind in table:
        if re.search(pattern, low):
            return Role(tier, kind, WATCHDOG if tier == WAITING and "watchdog" in kind else None)
    return None


@dataclass
class Rank:
    """One process, as the answer shows it."""

    process: Process
    first: Optional[Event]  # its first event
    lead: Optional[Event]  # its first cause or network event before it started waiting
    waiting_for: Optional[str] = None  # the first failure's process key


@dataclass
class Failure:
    process: Optional[Process]  # None where a node report names the node and no rank's log says why
    event: Event
    how: str  # how it was chosen: "earliest", "by kind", "only one", "node report"
    node: Optional[str] = None
    findings: list[Any] = field(default_factory=list)  # fleet.load.NodeFinding of its node

    @property
    def key(self) -> str:
        return self.process.key if self.process is not None else f"node {self.node}"

    @property
    def health(self) -> list[Any]:
        """Of its node's findings, those about the node's health (NODE_CAUSES)."""
        return _health(self.findings)


@dataclass
class Triage:
    read: Read
    ranks: list[Rank]
    first: Optional[Failure]
    silent: list[Process]  # processes that logged no event
    absent: list[int]  # ranks below the highest rank seen that no log holds
    reports: Mapping[str, Any]  # hostname -> fleet.load.NodeReport
    year: int  # the year taken for times without one


def triage(read: Read, reports: Mapping[str, Any] = {}) -> Triage:
    """The first failure of the job whose logs `read` holds, and every other rank folded onto it.
    `reports`: the nodes' reports by hostname; a process whose lines name no host is on the node a directory
    of its log's path is named after (logs/node-07/rank3.log), where a report has that hostname."""
    years = [e.stamp.year for p in read.processes for e in p.events if e.stamp and e.stamp.year]
    year = max(set(years), key=years.count) if years else 2000
    for p in read.processes:
        if not p.hosts and reports:
            p.hosts += _node_of_path(p.files, reports)
    ranks = [_rank(p) for p in read.processes]
    ranks.sort(key=lambda r: _order(r.process))
    leads = [r for r in ranks if r.lead is not None]
    first: Optional[Failure] = None
    if leads:
        timed = all(r.lead.stamp is not None for r in leads)
        order = {id(r): n for n, r in enumerate(ranks)}

        def key(r: Rank) -> tuple:
            e = r.lead
            when = e.stamp.key(year) if e.stamp else float("inf")
            return (when, e.role.tier, order[id(r)]) if timed else (e.role.tier, when, order[id(r)])

        best = min(leads, key=key)
        how = "only one" if len(leads) == 1 else "earliest" if timed else "by kind"
        first = Failure(best.process, best.lead, how, best.process.host)
    elif reports:
        first = _from_reports(ranks, reports)
    if first is not None:
        if first.node in reports and not first.findings:
            first.findings = _relevant(reports[first.node].findings)
        for r in ranks:
            if r.process is not first.process and r.first is not None:
                r.waiting_for = first.key
    silent = [r.process for r in ranks if r.first is None]
    seen = {p.rank for p in read.processes if p.rank is not None}
    absent = sorted(set(range(max(seen) + 1)) - seen) if seen else []
    return Triage(read, ranks, first, silent, absent, reports, year)


def _node_of_path(files: Sequence[str], reports: Mapping[str, Any]) -> list[str]:
    for f in files:
        for part in reversed(os.path.normpath(os.path.dirname(f)).split(os.sep)):
            if part in reports:
                return [part]
    return []


def _rank(p: Process) -> Rank:
    first = p.events[0] if p.events else None
    lead = None
    for e in p.events:
        if e.role.tier == WAITING:
            break
        if lead is None or e.role.tier < lead.role.tier:
            lead = e
    return Rank(p, first, lead)


def _order(p: Process) -> tuple:
    return (p.rank is None, p.rank if p.rank is not None else 0, p.local_rank or 0, p.key)


# A node finding that makes the node the likely first failure, most telling first: the GPU's faults and
# losses, then its RDMA ports.
NODE_CAUSES = ("GD-XID-", "GD-GPU-004", "GD-GPU-005", "GD-IB-", "GD-NVLINK-", "GD-ECC-")


def _relevant(findings: Sequence[Any]) -> list[Any]:
    """A node's findings about its health (Xid, lost GPUs, ports, NVLink, ECC), before the others."""

    def rank(f: Any) -> int:
        return next((i for i, p in enumerate(NODE_CAUSES) if f.rule.startswith(p)), len(NODE_CAUSES))

    return sorted((f for f in findings if f.severity in ("error", "warning")), key=rank)


def _health(findings: Sequence[Any]) -> list[Any]:
    return [f for f in findings if f.rule.startswith(NODE_CAUSES)]


def _from_reports(ranks: Sequence[Rank], reports: Mapping[str, Any]) -> Optional[Failure]:
    """Where no rank's log names a cause: the first of the job's nodes (in rank order) whose report has a
    health finding (NODE_CAUSES): the node is named, not a rank, since its ranks' logs say only that they
    waited."""
    for r in ranks:
        host = r.process.host
        if host in reports:
            found = _relevant(reports[host].findings)
            health = _health(found)
            if health:
                said = health[0]
                event = Event(
                    reports[host].file,
                    0,
                    said.message,
                    Role(CAUSE, said.title, said.rule),
                    None,
                    False,
                    None,
                    None,
                    host,
                )
                return Failure(None, event, "node report", host, found)
    return None


def as_json(t: Triage) -> dict:
    """The triage as the JSON document of `explain --log ... --format json` (docs/explain.md)."""

    def event(e: Optional[Event]) -> Optional[dict]:
        if e is None:
            return None
        return {
            "time": e.stamp.text() if e.stamp else None,
            "time_from": "line" if e.stamp_own else "an earlier line" if e.stamp else None,
            "role": TIERS[e.role.tier],
            "kind": e.role.kind,
            "cause": e.role.cause,
            "file": e.file,
            "line_no": e.line_no,
            "line": e.text[:1000],
        }

    first = None
    if t.first is not None:
        p, e = t.first.process, t.first.event
        first = {
            "process": t.first.key,
            "rank": p.rank if p else None,
            "local_rank": p.local_rank if p else None,
            "node": t.first.node,
            "time": e.stamp.text() if e.stamp else None,
            "cause": {"id": e.role.cause, "title": e.role.kind, "role": TIERS[e.role.tier]},
            "line": e.text[:1000],
            "file": e.file,
            "line_no": e.line_no,
            "chosen": t.first.how,
            "node_findings": [
                {"rule": f.rule, "severity": f.severity, "title": f.title, "message": f.message}
                for f in t.first.findings
            ],
        }
    return {
        "schema": "gpudoctor.explain.ranks",
        "schema_version": 1,
        "logs": [{"file": f, "lines": n} for f, n in t.read.files],
        "ranks": [
            {
                "process": r.process.key,
                "rank": r.process.rank,
                "local_rank": r.process.local_rank,
                "node": r.process.host,
                "files": r.process.files,
                "events": len(r.process.events) + r.process.more,
                "first_event": event(r.first),
                "waiting_for": r.waiting_for,
            }
            for r in t.ranks
        ],
        "first_failure": first,
        "silent": [p.key for p in t.silent],
        "absent_ranks": t.absent,
        "nodes_reported": sorted(t.reports),
    }
