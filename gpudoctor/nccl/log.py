"""What an NCCL_DEBUG=INFO log says NCCL chose: a pure parser, text in, data out.

NCCL prints each line as `host:pid:tid [cudaDev] NCCL INFO message`. Launchers and log collectors put
their own prefix before it (mpirun's `[0] `, a timestamp, Python logging's `... - INFO - `, k9s' `│ `), so
the NCCL part is searched for anywhere in the line, not anchored at its start. The messages read here, with
the NCCL releases they were seen in (tests/nccl/data/SOURCES.md has the threads):

- `NCCL version 2.18.3+cuda12.2`: bare on stdout up to 2.24, an INFO message from 2.25;
- `comm 0x.. rank R nRanks N nNodes M localRanks L localRank l MNNVL 0` (2.19+), and `comm 0x.. rank R
  nranks N cudaDev D [nvmlDev V] [busId B] ... - Init START|Init COMPLETE|Destroy COMPLETE`;
- `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read`, `... [send] via NET/IB/0/GDRDMA`; before 2.12 the bracket
  holds the busId (`2[c7000]`), before 2.5 the line says `Ring 00 : 15 -> 0 [receive] via NET/Socket/0`;
- `Using network IB|Socket|IBext|...`, `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ...` (with
  NICs merged into virtual ones, `[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}`: the physical ones are kept),
  `NET/Socket : Using [0]eth0:10.0.0.1<0>`, `NET/IB : No device found.`;
- `NCCL_IB_DISABLE set by environment to 1.`, `NCCL_IB_HCA set to mlx5_2:1,mlx5_0:1`;
- `GPU Direct RDMA Disabled for HCA 0 'mlx5_0'`, `DMA-BUF is available on GPU device 0`;
- `Could not enable P2P between dev 1(=1b000) and dev 0(=1a000)`; `NCCL WARN ...` lines.

A line that is none of these is left out; nothing here raises on what it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

__all__ = [
    "Channel",
    "GdrStatement",
    "IbDevice",
    "NcclLog",
    "RankInfo",
    "SocketInterface",
    "Transport",
    "parse_log",
    "parse_transport",
    "transports",
]

# host:pid:tid [cudaDev] NCCL INFO|WARN message. host, pid and tid hold no blank and no colon; pid and tid
# are kept as text because logs pasted into issues are often anonymised (`pod-id:num:num`).
_PREFIX = re.compile(r"(?P<host>[^\s:]+):(?P<pid>[^\s:]+):(?P<tid>[^\s:]+) \[(?P<dev>\d+)\] (?P<rest>.*)$")
_LEVEL = re.compile(r"(?:\S+:\d+ )?NCCL (?P<level>INFO|WARN) (?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (?P<version>\d+\.\d+\.\d+)(?:[-+][\w.]*)?")
_COMM = re.compile(
    r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)(?P<rest>.*)$"
)
_NNODES = re.compile(r"\bnNodes (\d+)")
_LOCAL_RANK = re.compile(r"\blocalRank (\d+)")
_CUDA_DEV = re.compile(r"\bcudaDev (\d+)")
_BUS_ID = re.compile(r"\bbusId ([0-9a-fA-F]+)")
_CHANNEL = re.compile(
    r"^(?:Channel|Ring) (?P<channel>\d+)(?:/(?P<conn>\d+))? : "
    r"(?P<src>\d+)(?:\[(?P<srctag>[0-9a-fA-F]+)\])? -> (?P<dst>\d+)(?:\[(?P<dsttag>[0-9a-fA-F]+)\])?"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>.+)$"
)
_USING_NETWORK = re.compile(r"^Using network (?P<net>.+?)\s*$")
_NET_IB_USING = re.compile(r"^NET/(?P<plugin>IB\w*) ?: Using (?P<devs>.*?)(?:;? ?OOB (?P<oob>\S+))?\s*$")
_IB_DEV = re.compile(
    r"\[(?P<index>\d+)\] ?(?P<name>[^\s:\[\]={},]+):(?P<port>\d+)/(?P<link>[A-Za-z]+)(?P<extra>/[^\s,}]+)?"
)
_NET_SOCKET_USING = re.compile(r"^NET/Socket ?: Using (?P<ifs>.*)$")
_SOCKET_IF = re.compile(r"\[(?P<index>\d+)\](?P<name>[^\s:]+):(?P<addr>\S+?)<\d+>")
_ENV = re.compile(r"^(?P<name>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<value>.*?)\s*$")
_GDR_HCA = re.compile(r"HCA (?P<index>\d+) '(?P<name>[^']*)'")
_GDR_GPU = re.compile(r"GPU (?P<gpu>\d+)")
_DMABUF = re.compile(r"^DMA-BUF is available on GPU device (?P<gpu>\d+)")
_NO_P2P = re.compile(
    r"^Could not enable P2P between dev (?P<a>\d+)\(=(?P<abus>\w+)\) and dev (?P<b>\d+)\(=(?P<bbus>\w+)\)"
)
# k9s and other viewers frame each line; the frame is not part of NCCL's message.
_FRAME = " \t│|"


@dataclass(frozen=True)
class Transport:
    """One `via ...` as NCCL printed it, split into its parts.

    kind: p2p | shm | net | nvls | collnet | unknown. detail: for P2P the mechanism (IPC, CUMEM, direct
    pointer), for SHM what follows it. net: the network plugin's name for kind net (IB, IBext_v8, Socket,
    Libfabric), nic: the NIC index it printed, proxy: the PXN proxy rank in `NET/IB/0(4)`, gdr: GPUDirect
    RDMA on this connection, read: P2P read mode.
    """

    raw: str
    kind: str
    detail: str = ""
    net: str = ""
    nic: Optional[int] = None
    proxy: Optional[int] = None
    gdr: bool = False
    read: bool = False

    @property
    def label(self) -> str:
        """The transport without the NIC index, so two channels over different NICs compare equal."""
        if self.kind == "net":
            return "NET/" + self.net + ("/GDRDMA" if self.gdr else "")
        return self.raw


@dataclass(frozen=True)
class Channel:
    channel: int
    src: int
    dst: int
    transport: Transport
    conn: Optional[int] = None  # the `/0` or `/1` after the channel number (2.12+)
    src_tag: str = ""  # the bracket after the rank: cudaDev from 2.12, busId before
    dst_tag: str = ""
    direction: str = ""  # send | receive for network connections, else empty
    host: str = ""


@dataclass(frozen=True)
class RankInfo:
    rank: int
    nranks: int
    comm: str
    host: str = ""
    pid: str = ""
    cuda_dev: Optional[int] = None
    bus_id: str = ""
    nnodes: Optional[int] = None
    local_rank: Optional[int] = None


@dataclass(frozen=True)
class IbDevice:
    index: int
    name: str
    port: int
    link_layer: str  # IB | RoCE, as NCCL printed it
    extra: str = ""  # e.g. /SHARP


@dataclass(frozen=True)
class SocketInterface:
    index: int
    name: str
    address: str


@dataclass(frozen=True)
class GdrStatement:
    enabled: bool
    text: str
    hca: str = ""
    hca_index: Optional[int] = None
    gpu: Optional[int] = None
    host: str = ""


@dataclass(frozen=True)
class NcclLog:
    versions: tuple[str, ...] = ()
    ranks: tuple[RankInfo, ...] = ()
    channels: tuple[Channel, ...] = ()
    networks: tuple[str, ...] = ()  # `Using network X`, in the order first seen
    ib_devices: tuple[IbDevice, ...] = ()
    ib_no_device: bool = False  # `NET/IB : No device found.`
    socket_interfaces: tuple[SocketInterface, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # first value seen per variable
    gdr: tuple[GdrStatement, ...] = ()
    dmabuf_gpus: tuple[int, ...] = ()
    p2p_unavailable: tuple[tuple[int, int], ...] = ()  # (dev a, dev b) from `Could not enable P2P`
    warnings: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()

    @property
    def version(self) -> Optional[str]:
        return self.versions[0] if self.versions else None

    @property
    def nranks(self) -> Optional[int]:
        return max((r.nranks for r in self.ranks), default=None)

    @property
    def nnodes(self) -> Optional[int]:
        return max((r.nnodes for r in self.ranks if r.nnodes is not None), default=None)


def parse_transport(via: str) -> Transport:
    """Split what follows `via` (`P2P/IPC/read`, `NET/IB/0(4)/GDRDMA`, `SHM/direct/direct`,
    `direct shared memory`) into its parts. P2P's forms: P2P/direct pointer, P2P/IPC, P2P/CUMEM, P2P/indirect
    (NVIDIA/nccl@v2.23.4-1:src/transport/p2p.cc p2pSendSetup); SHM/direct|CE/direct|CE from v2.13
    (shm.cc)."""
    raw = via.strip()
    parts = raw.split("/")
    head = parts[0]
    if head == "P2P":
        rest = parts[1:]
        read = "read" in rest
        detail = "/".join(p for p in rest if p != "read")
        return Transport(raw, "p2p", detail=detail, read=read)
    if head == "SHM":
        return Transport(raw, "shm", detail="/".join(parts[1:]))
    if raw == "direct shared memory":  # before v2.13 (NVIDIA/nccl@v2.12.7-1:src/transport/shm.cc:73)
        return Transport(raw, "shm", detail="direct")
    if head == "NET" and len(parts) >= 2:
        nic = proxy = None
        if len(parts) >= 3:
            m = re.match(r"(\d+)(?:\((\d+)\))?$", parts[2])
            if m:
                nic = int(m.group(1))
                proxy = int(m.group(2)) if m.group(2) else None
        return Transport(raw, "net", net=parts[1], nic=nic, proxy=proxy, gdr="GDRDMA" in parts[3:])
    upper = head.upper()
    if upper.startswith("NVLS"):
        return Transport(raw, "nvls", detail="/".join(parts[1:]))
    if upper.startswith("COLLNET"):
        return Transport(raw, "collnet", detail="/".join(parts[1:]))
    return Transport(raw, "unknown")


def _nccl_part(line: str) -> Optional[tuple[str, str, int, str, str]]:
    """(host, pid, cudaDev, level, message) of a line NCCL wrote, wherever it sits in the line."""
    m = _PREFIX.search(line)
    if not m:
        return None
    lm = _LEVEL.match(m.group("rest"))
    if not lm:
        return None
    return m.group("host"), m.group("pid"), int(m.group("dev")), lm.group("level"), lm.group("msg")


class _Builder:
    def __init__(self) -> None:
        self.versions: list[str] = []
        self.ranks: dict[tuple[str, int], RankInfo] = {}
        self.channels: list[Channel] = []
        self.networks: list[str] = []
        self.ib_devices: dict[tuple[int, str], IbDevice] = {}
        self.ib_no_device = False
        self.sockets: dict[tuple[int, str, str], SocketInterface] = {}
        self.env: dict[str, str] = {}
        self.gdr: list[GdrStatement] = []
        self.dmabuf: list[int] = []
        self.no_p2p: list[tuple[int, int]] = []
        self.warnings: list[str] = []
        self.hosts: list[str] = []

    def line(self, line: str) -> None:
        vm = _VERSION.search(line)
        if vm and vm.group("version") not in self.versions:
            self.versions.append(vm.group("version"))
        part = _nccl_part(line)
        if part is None:
            return
        host, pid, dev, level, msg = part
        msg = msg.rstrip(_FRAME)
        if host not in self.hosts:
            self.hosts.append(host)
        if level == "WARN":
            self.warnings.append(msg)
            return
        self.message(host, pid, dev, msg)

    def message(self, host: str, pid: str, dev: int, msg: str) -> None:
        m = _CHANNEL.match(msg)
        if m:
            self.channels.append(
                Channel(
                    channel=int(m.group("channel")),
                    conn=int(m.group("conn")) if m.group("conn") is not None else None,
                    src=int(m.group("src")),
                    dst=int(m.group("dst")),
                    src_tag=m.group("srctag") or "",
                    dst_tag=m.group("dsttag") or "",
                    direction=m.group("dir") or "",
                    transport=parse_transport(m.group("via")),
                    host=host,
                )
            )
            return
        m = _COMM.search(msg)
        if m:
            self.comm(host, pid, m)
            return
        for pattern, handler in (
            (_USING_NETWORK, self.using_network),
            (_NET_IB_USING, self.ib_using),
            (_NET_SOCKET_USING, self.socket_using),
            (_ENV, self.env_override),
            (_DMABUF, self.dmabuf_line),
            (_NO_P2P, self.no_p2p_line),
        ):
            pm = pattern.match(msg)
            if pm:
                handler(pm)
                return
        if msg.startswith("NET/IB : No device found"):
            self.ib_no_device = True
        elif "GPU Direct RDMA" in msg:
            self.gdr_line(host, msg)

    def comm(self, host: str, pid: str, m: re.Match[str]) -> None:
        rest = m.group("rest")
        key = (m.group("comm"), int(m.group("rank")))
        old = self.ranks.get(key) or RankInfo(
            rank=key[1], nranks=int(m.group("nranks")), comm=key[0], host=host, pid=pid
        )

        def num(p: re.Pattern[str], current: Optional[int]) -> Optional[int]:
            f = p.search(rest)
            return int(f.group(1)) if f else current

        bus = _BUS_ID.search(rest)
        self.ranks[key] = RankInfo(
            rank=old.rank,
            nranks=old.nranks,
            comm=old.comm,
            host=old.host,
            pid=old.pid,
            cuda_dev=num(_CUDA_DEV, old.cuda_dev),
            bus_id=bus.group(1) if bus else old.bus_id,
            nnodes=num(_NNODES, old.nnodes),
            local_rank=num(_LOCAL_RANK, old.local_rank),
        )

    def using_network(self, m: re.Match[str]) -> None:
        if m.group("net") not in self.networks:
            self.networks.append(m.group("net"))

    def ib_using(self, m: re.Match[str]) -> None:
        for d in _IB_DEV.finditer(m.group("devs")):
            dev = IbDevice(
                index=int(d.group("index")),
                name=d.group("name"),
                port=int(d.group("port")),
                link_layer=d.group("link"),
                extra=d.group("extra") or "",
            )
            self.ib_devices.setdefault((dev.index, dev.name), dev)

    def socket_using(self, m: re.Match[str]) -> None:
        for s in _SOCKET_IF.finditer(m.group("ifs")):
            sif = SocketInterface(index=int(s.group("index")), name=s.group("name"), address=s.group("addr"))
            self.sockets.setdefault((sif.index, sif.name, sif.address), sif)

    def env_override(self, m: re.Match[str]) -> None:
        value = m.group("value")
        if re.fullmatch(r"-?\d+\.", value):  # NCCL ends an integer parameter's line with a period
            value = value[:-1]
        self.env.setdefault(m.group("name"), value)

    def dmabuf_line(self, m: re.Match[str]) -> None:
        gpu = int(m.group("gpu"))
        if gpu not in self.dmabuf:
            self.dmabuf.append(gpu)

    def no_p2p_line(self, m: re.Match[str]) -> None:
        pair = (int(m.group("a")), int(m.group("b")))
        if pair not in self.no_p2p:
            self.no_p2p.append(pair)

    def gdr_line(self, host: str, msg: str) -> None:
        hca = _GDR_HCA.search(msg)
        gpu = _GDR_GPU.search(msg.split("GPU Direct RDMA", 1)[1])
        self.gdr.append(
            GdrStatement(
                enabled=bool(re.search(r"GPU Direct RDMA (?:\([^)]*\) )?[Ee]nable", msg)),
                text=msg,
                hca=hca.group("name") if hca else "",
                hca_index=int(hca.group("index")) if hca else None,
                gpu=int(gpu.group("gpu")) if gpu else None,
                host=host,
            )
        )

    def build(self) -> NcclLog:
        return NcclLog(
            versions=tuple(self.versions),
            ranks=tuple(sorted(self.ranks.values(), key=lambda r: (r.rank, r.comm))),
            channels=tuple(self.channels),
            networks=tuple(self.networks),
            ib_devices=tuple(self.ib_devices.values()),
            ib_no_device=self.ib_no_device,
            socket_interfaces=tuple(self.sockets.values()),
            env=dict(self.env),
            gdr=tuple(self.gdr),
            dmabuf_gpus=tuple(self.dmabuf),
            p2p_unavailable=tuple(self.no_p2p),
            warnings=tuple(self.warnings),
            hosts=tuple(self.hosts),
        )


def parse_log(text: str) -> NcclLog:
    """Everything parse_log knows how to read in an NCCL_DEBUG=INFO log (one rank's, or many interleaved)."""
    builder = _Builder()
    for line in text.splitlines():
        builder.line(line)
    return builder.build()


def transports(log: NcclLog) -> dict[tuple[int, int], set[str]]:
    """Per directed pair of ranks (as NCCL printed it, from -> to), the transports NCCL used, by label
    (`P2P/IPC/read`, `SHM/direct/direct`, `NET/IB/GDRDMA`, `NET/Socket`)."""
    out: dict[tuple[int, int], set[str]] = {}
    for ch in log.channels:
        out.setdefault((ch.src, ch.dst), set()).add(ch.transport.label)
    return out
