"""What an NCCL_DEBUG=INFO log says NCCL chose, read from its text: the version and, for each pair of GPUs,
the transport of its `Channel` lines. Pure functions of the text."""

from __future__ import annotations

import re
from typing import Optional

# `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC` (the ring's), `Channel 00/1 : 0[18000] -> 1[1b000] [send] via
# NET/IB/0/GDRDMA`; from NVIDIA/nccl src/transport/p2p.cc, shm.cc, net.cc (INFO "Channel %02d%s : %d[%lx]
# -> %d[%lx]%s via %s").
CHANNEL = re.compile(
    r"Channel \d+(?:/\d+)? : \d+\[([0-9a-fA-F]+)\] -> \d+\[([0-9a-fA-F]+)\](?: \[\w+\])? via (\S+)"
)
VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")


def channels(text: str) -> dict[tuple[str, str], str]:
    """{(the sending GPU, the receiving GPU) as the log names them: the text after "via"} (the last seen)."""
    return {(m.group(1), m.group(2)): m.group(3) for m in CHANNEL.finditer(text)}


def nccl_version(text: str) -> Optional[str]:
    found = VERSION.search(text)
    return found.group(1) if found else None
