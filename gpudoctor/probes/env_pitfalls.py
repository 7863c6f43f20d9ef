"""Environment variables that slow or break GPU jobs, read by name only (never the whole environment).

The system probe calls `facts(host)`; each variable becomes `env.<name in lower case>`, unknown ("not set")
when unset, so that rules tell unset from set-but-empty. `env.profiler_injection` gathers what loads a
profiler into every CUDA process: CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH, and LD_PRELOAD entries that
look like profiler injection libraries. Judging CUDA_VISIBLE_DEVICES against the GPUs and NCCL_SOCKET_IFNAME
against the network interfaces needs other probes' facts: `derive(facts)` does it once they are collected
(the system probe's derive calls it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Optional

from ..facts import Fact, Facts, collected, known, unknown
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
# Held as text, compiled by re's own cache when first used: a host without what it reads never uses it
# (compiled at import, it cost every check 0.05-0.15 ms).
# CUPTI injection libraries are named so in NVIDIA's samples (libinjection.so, libcupti_trace_injection.so)
# and CUPTI itself is libcupti.so; a preloaded copy of either instruments every CUDA call.
_PROFILER_LIB = r"(injection|cupti)"


def profiler_preloads(text: str) -> list[str]:
    """LD_PRELOAD entries (blank- or colon-separated, as ld.so reads them) that name profiler libraries."""
    names = [p for p in re.split(r"[\s:]+", text) if p]
    return [p for p in names if re.search(_PROFILER_LIB, p.rsplit("/", 1)[-1], re.IGNORECASE)]


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


def split_visible_devices(text: str) -> list[str]:
    """CUDA_VISIBLE_DEVICES' entries as CUDA reads them (the CUDA programming guide: indexes, GPU-... UUIDs
    or prefixes of them, MIG-... identifiers, separated by commas), in order. CUDA stops at the first
    invalid one, so an empty entry ends the list too. Blanks around entries are dropped."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            break
        out.append(part)
    return out


def unmatched_visible_devices(entries: Sequence[str], count: int, uuids: Sequence[str]) -> list[str]:
    """The CUDA_VISIBLE_DEVICES entries that name no GPU: an index outside 0..count-1, a GPU-... identifier
    that no UUID starts with (CUDA accepts a unique prefix), or text of neither form. MIG-... entries name
    MIG devices, whose UUIDs NVML's GPU list does not carry, and are not judged; nor is a negative index
    (CUDA_VISIBLE_DEVICES=-1 is the usual way to hide every GPU on purpose: CUDA stops there)."""
    out = []
    for entry in entries:
        if re.fullmatch(r"-[0-9]+", entry):
            break  # CUDA sees nothing past it
        if entry.startswith("MIG-"):
            continue
        if re.fullmatch(r"[0-9]+", entry):
            if int(entry) >= count:
                out.append(entry)
        elif entry.startswith("GPU-"):
            if not any(u.lower().startswith(entry.lower()) for u in uuids):
                out.append(entry)
        else:
            out.append(entry)
    return out


def socket_ifname_matches(spec: str, interfaces: Sequence[str]) -> int:
    """How many interfaces NCCL_SOCKET_IFNAME selects, by NCCL's rules: a comma-separated list of prefixes;
    a leading ^ excludes what the list matches instead; an entry starting with = matches a whole name."""
    spec = spec.strip()
    exclude = spec.startswith("^")
    items = [p.strip() for p in (spec[1:] if exclude else spec).split(",") if p.strip()]

    def hit(name: str) -> bool:
        return any(name == p[1:] if p.startswith("=") else name.startswith(p) for p in items)

    return sum(1 for name in interfaces if hit(name) != exclude)


def derive(facts: Facts) -> dict[str, Fact]:
    """env.cuda_visible_devices_unmatched and env.nccl_socket_ifname_matches (system.derive runs it)."""
    out: dict[str, Fact] = {}
    cvd, count = facts.get("env.cuda_visible_devices"), facts.get("gpus.count")
    if "env.cuda_visible_devices" in facts and collected(facts, "gpus.count"):
        source = "derived:env.cuda_visible_devices,gpus.count,gpus[].uuid"
        if not cvd.known:
            fact = unknown(cvd.unknown or "", source)
        elif not count.known:
            fact = unknown(count.unknown or "", source)
        else:
            uuids = [facts.value(f"gpus[{i}].uuid", "") for i in range(facts.count("gpus"))]
            entries = split_visible_devices(cvd.value)
            fact = known(unmatched_visible_devices(entries, count.value, [u for u in uuids if u]), source)
        out["env.cuda_visible_devices_unmatched"] = fact
        out["env.cuda_visible_devices_unmatched_count"] = (
            known(len(fact.value), source) if fact.known else unknown(fact.unknown or "", source)
        )
    if "env.nccl_socket_ifname" in facts and collected(facts, "interconnect.net_interfaces"):
        spec, names = facts.get("env.nccl_socket_ifname"), facts.get("interconnect.net_interfaces")
        source = "derived:env.nccl_socket_ifname,interconnect.net_interfaces"
        if not spec.known:
            out["env.nccl_socket_ifname_matches"] = unknown(spec.unknown or "", source)
        elif not names.known:
            out["env.nccl_socket_ifname_matches"] = unknown(names.unknown or "", source)
        else:
            out["env.nccl_socket_ifname_matches"] = known(
                socket_ifname_matches(spec.value, names.value), source
            )
    return out
