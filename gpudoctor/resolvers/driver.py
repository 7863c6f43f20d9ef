"""The driver resolver: the minimum driver and the branch to install for a wanted CUDA version."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from ..compat import version_tuple as _vt
from ..knowledge import Knowledge, min_driver_for_cuda, minor_compat_floor
from .base import DriverNeed, Resolution, _fail

if TYPE_CHECKING:
    from ..facts import Facts


def driver_for_cuda(cuda: str, kb: Knowledge) -> tuple[Optional[DriverNeed], str]:
    """The minimum driver and the branch to install for CUDA `cuda` ("13.0", "12.6.3"; a bare major such as
    "13" takes that major's minor-version floor). The branch: the first long-term support branch (LTSB)
    from the minimum's branch on that supports the CUDA major, else the first branch that does."""
    parts = _vt(cuda)
    if not parts:
        return None, f"not a CUDA version: {cuda!r}"
    try:
        if len(parts) == 1:
            minimum, minor = minor_compat_floor(parts[0], kb), True
        else:
            minimum, minor = min_driver_for_cuda(cuda, kb), False
    except LookupError as e:
        return None, str(e)
    first = _vt(minimum)[0]
    branches = sorted(
        (
            b
            for b in kb.driver_branches
            if b.branch >= first and (b.max_cuda_major is None or b.max_cuda_major >= parts[0])
        ),
        key=lambda b: b.branch,
    )
    pick = next((b for b in branches if b.designation == "LTSB"), branches[0] if branches else None)
    return DriverNeed(
        cuda=cuda,
        minimum=minimum,
        branch=pick.branch if pick else None,
        designation=pick.designation if pick else "",
        eol=pick.eol if pick else "",
        minor_compat=minor,
    ), ""


def driver_branch(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The driver a wanted CUDA needs: args cuda="13.0", else the fact args cuda_fact names (an image's
    required CUDA, container.require_cuda), else the CUDA of the framework at `item`."""
    args = args or {}
    cuda = args.get("cuda") or (facts.value(args["cuda_fact"]) if args.get("cuda_fact") else None)
    cuda = cuda or (facts.value(f"frameworks[{item}].cuda") if item is not None else None)
    if not cuda:
        return _fail("driver", "the NVIDIA driver", "no CUDA version to find a driver for")
    need, why = driver_for_cuda(str(cuda), kb)
    if need is None:
        return _fail("driver", "the NVIDIA driver", f"cannot find a driver for CUDA {cuda}: {why}")
    current = facts.value("driver.version")
    if isinstance(current, str) and _vt(current) and _vt(current) >= _vt(need.minimum):
        return Resolution(
            "driver",
            "the NVIDIA driver",
            True,
            reasons=(f"driver {current} already meets CUDA {cuda}'s minimum {need.minimum}",),
        )
    branch = (
        f"R{need.branch} ({need.designation}, supported until {need.eol})"
        if need.branch
        else "no branch in the table"
    )
    return Resolution(
        "driver",
        "the NVIDIA driver",
        True,
        driver=need,
        minor_compat=need.minor_compat,
        reasons=(
            f"CUDA {cuda} needs driver {need.minimum} or newer"
            + (" (the CUDA major's minor-version floor)" if need.minor_compat else ""),
            f"branch: {branch}",
        ),
    )
