"""The TensorFlow resolver: a tested CUDA 12 build the driver runs, for the interpreter's Python."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from ..compat import driver_verdict
from ..compat import version_tuple as _vt
from ..knowledge import Knowledge
from ..knowledge import tensorflow_build as tensorflow_row
from .base import EXACT_VERSION, Resolution, _python_ok, begin, beyond_tables, not_downgraded, release_order

if TYPE_CHECKING:
    from ..facts import Facts


def tensorflow_build(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """A TensorFlow release with a tested CUDA 12 build (installed with the `and-cuda` extra, which brings
    the CUDA libraries as nvidia-*-cu12 wheels) that the driver runs, for the interpreter's Python; the
    installed major.minor first, then the newest."""
    req = begin("tensorflow", "a TensorFlow build", facts, kb, item, args, tensorflow_row)
    if isinstance(req, Resolution):
        return req
    host, have, keep, avoid = req.host, req.have, req.keep, req.avoid
    beyond = beyond_tables("tensorflow", have, [r.version for r in kb.tensorflow_builds])
    if beyond:
        return Resolution("tensorflow", "tensorflow", False, reasons=(beyond,))
    rows = [r for r in kb.tensorflow_builds if _vt(r.cuda)[0] >= 12]
    order, older = release_order(rows, keep, have, req.downgrade)
    rejected: list[str] = not_downgraded("tensorflow", older)
    for row in order:
        label = f"tensorflow {row.version} (CUDA {row.cuda})"
        if not _python_ok(host.python, row.python_min, row.python_max):
            rejected.append(f"{label}: Python {host.python} is outside its {row.python_min}-{row.python_max}")
            continue
        dv = driver_verdict(row.cuda, host.driver, kb, avoid)
        if not dv.runs:
            rejected.append(f"{label}: {dv.reason}")
            continue
        exact = (
            have.version
            if have and row is keep and have.version and EXACT_VERSION.match(have.version)
            else None
        )
        pin = f"tensorflow[and-cuda]=={exact}" if exact else f"tensorflow[and-cuda]=={row.version}.*"
        uninstall = ()
        if have is not None and have.distribution and have.distribution != "tensorflow":
            uninstall = (have.distribution,)
        head = (
            f"keeps tensorflow {row.version} (installed {have.version})"
            if row is keep
            else f"tensorflow {row.version} is the newest tested CUDA 12 build this host runs"
        )
        return Resolution(
            "tensorflow",
            "tensorflow",
            True,
            packages=(pin,),
            uninstall=uninstall,
            minor_compat=dv.minor_compat,
            reasons=(
                head,
                *rejected,
                f"tested with CUDA {row.cuda} and cuDNN {row.cudnn}",
                dv.reason,
                f"Python {host.python} is within {row.python_min}-{row.python_max}",
            ),
            notes=(
                "the tensorflow table lists no compute capabilities: GPU kernels were not checked",
                *(
                    (f"{have.distribution} is removed first: it installs the same tensorflow module",)
                    if uninstall
                    else ()
                ),
            ),
        )
    return Resolution(
        "tensorflow",
        "tensorflow",
        False,
        reasons=(
            f"no tested CUDA 12 TensorFlow build runs on driver {host.driver} with Python {host.python}",
            *rejected[:6],
        ),
        needs_cuda=keep.cuda if keep is not None else None,
    )
