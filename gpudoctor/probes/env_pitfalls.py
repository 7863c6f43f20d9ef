"""Environment variables that slow or break GPU jobs, read by name only (never the whole environment).

The system probe calls `facts(host)`; each variable becomes `env.<name in lower case>`, unknown ("not set")
when unset, so that rules tell unset from set-but-empty. `env.profiler_injection` gathers what loads a
profiler into every CUDA process: CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH, and LD_PRELOAD entries that
look like profiler injection libraries. Judging CUDA_VISIBLE_DEVICES against the GPUs and NCCL_SOCKET_IFNAME
against the network interfaces is derive's work (gpudoctor/derive.py).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from ..facts import Fact, known, unknown
from ..host.base import HostError

VARIABLES = (
    "CUDA_LAUNCH_BLOCKING",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_SOCKET_IFNAME",
    "CUDA_INJECTION64_PATH",
    "NVTX_INJECTION64_PATH",
    "LD_PRELOAD",
)
# CUPTI injection libraries are named so in NVIDIA's samples (libinjection.so, libcupti_trace_injection.so)
# and CUPTI itself is libcupti.so; a preloaded copy of either instruments every CUDA call.
_PROFILER_LIB = re.compile(r"(injection|cupti)", re.IGNORECASE)


def profiler_preloads(text: str) -> list[str]:
    """LD_PRELOAD entries (blank- or colon-separated, as ld.so reads them) that name profiler libraries."""
    return [p for p in re.split(r"[\s:]+", text) if p and _PROFILER_LIB.search(p.rsplit("/", 1)[-1])]


def injection(values: dict[str, Fact]) -> tuple[list[str], Optional[str]]:
    """What sets up profiler injection, as NAME=value items, or (items so far, why it cannot be told)."""
    items: list[str] = []
    why = None
    for name in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "LD_PRELOAD"):
        fact = values[f"env.{name.lower()}"]
        if fact.known:
            found = profiler_preloads(fact.value) if name == "LD_PRELOAD" else [fact.value]
            items += [f"{name}={v}" for v in found]
        elif fact.unknown != "not set":
            why = why or fact.unknown
    return items, why


def env_fact(host: Any, name: str) -> Fact:
    """An environment variable as a fact: unknown "not set" when it is unset, or with the reason it could
    not be read (a snapshot that did not record it)."""
    source = f"env:{name}"
    try:
        value = host.env(name)
    except HostError as e:
        return unknown(e.reason, source)
    return unknown("not set", source) if value is None else known(value, source)


def facts(host: Any) -> dict[str, Fact]:
    out = {f"env.{name.lower()}": env_fact(host, name) for name in VARIABLES}
    items, why = injection(out)
    source = "env:CUDA_INJECTION64_PATH,NVTX_INJECTION64_PATH,LD_PRELOAD"
    if items or why is None:
        out["env.profiler_injection"] = known(items, source)
        out["env.profiler_injection_count"] = known(len(items), source)
    else:
        out["env.profiler_injection"] = unknown(why, source)
        out["env.profiler_injection_count"] = unknown(why, source)
    return out
