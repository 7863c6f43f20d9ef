"""The base_image resolver: the CUDA release of an nvidia/cuda base image the host runs, for an image the
container runtime refuses (the image side of the fix; the driver resolver is the node side).

NVIDIA's CUDA images are tagged by the toolkit release they carry, `nvidia/cuda:<release>-<flavour>-<os>`
(`nvidia/cuda:12.9.1-devel-ubuntu22.04`, google-deepmind/meltingpot@015fecf77b52524cf6c3f61b22fd8151baed3741:
.devcontainer/Dockerfile; `nvidia/cuda:11.8.0-devel-ubuntu22.04`, Rose-STL-Lab/nautilus_tutorial@
2635b21f7ea1c69e915dd6866fd084472cdaec48:Dockerfile), and ask the driver for that release's major.minor:
the 12.0.0 base sets CUDA_VERSION=12.0.0 and NVIDIA_REQUIRE_CUDA="cuda>=12.0 brand=..." (a copy of NVIDIA's
dist/12.0.0/ubuntu2204/base/Dockerfile, wordslab-org/wordslab@f5f741d1d7202b1e62c2977fc213fdcd075c8538:
doc/infra/containers/nvidia-cuda-base-install.sh). All three read 2026-12-05.

The answer: the newest toolkit release in the cuda_drivers table whose major.minor is at most the CUDA the
driver reports (driver.max_cuda: what the runtime compares cuda>= with), whose minimum driver the host's
driver meets (so nothing rests on minor-version compatibility), and whose CUDA major still builds for the
oldest GPU (cuda_drivers gpu_floors; a major without a floor excludes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

from ..compat import toolkit_supports_gpu
from ..compat import version_tuple as _vt
from ..knowledge import CudaToolkit, Knowledge, cuda_min_cc
from .base import Resolution, _fail, read_host

if TYPE_CHECKING:
    from ..facts import Facts

NAME = "base_image"
SUBJECT = "the image's CUDA base"
# The knowledge tables give no first CUDA release per GPU (gpus.yaml has none), only each major's oldest GPU.
# The releases named: shared/knowledge/COMPAT-NOTES.md section 7 ("Architectures first supported").
FIRST_CUDA_NOTE = (
    "the knowledge tables do not say which CUDA release first builds for each GPU (sm_89 and sm_90 came with "
    "CUDA 11.8, sm_100 and sm_120 with 12.8), so a base older than the GPU is not ruled out here: the "
    "framework checks (kernels for the GPU) find that"
)


def release(row: CudaToolkit) -> str:
    """The release a toolkit row stands for, as nvidia/cuda tags name it: 12.8 update 1 -> "12.8.1"."""
    return row.release or f"{row.cuda}.{row.update}"


def base_image(
    facts: Facts, kb: Knowledge, item: Optional[int] = None, args: Optional[Mapping[str, str]] = None
) -> Resolution:
    """The newest CUDA toolkit release an nvidia/cuda base image may carry on this host: within the driver's
    CUDA (driver.max_cuda) and its version (driver.version), and built for its oldest GPU. Takes no args."""
    host, why = read_host(facts, kb, need_python=False)
    if host is None:
        return _fail(NAME, SUBJECT, f"cannot choose its CUDA release: {why}")
    max_cuda = facts.get("driver.max_cuda")
    if not max_cuda.known or len(_vt(max_cuda.value)) < 2:
        why = f"the driver's CUDA is unknown ({max_cuda.unknown or max_cuda.value})"
        return _fail(NAME, SUBJECT, f"cannot choose its CUDA release: {why}")
    top, driver = _vt(max_cuda.value)[:2], _vt(host.driver)
    within = sorted(
        (t for t in kb.cuda_toolkits if _vt(t.cuda)[:2] <= top and _vt(t.driver) <= driver),
        key=lambda t: _vt(release(t)),
        reverse=True,
    )
    if not within:
        return _fail(
            NAME,
            SUBJECT,
            f"no CUDA release in gpudoctor's table runs on driver {host.driver} (CUDA {max_cuda.value})",
        )
    cc, gpu = host.gpus[0]  # the oldest GPU
    fits = [t for t in within if toolkit_supports_gpu(t.cuda, cc, kb) is not False]  # None: no floor
    newest = within[0]
    reasons = [
        f"driver {host.driver} runs CUDA {max_cuda.value}; the newest toolkit release within it is "
        f"{release(newest)} (needs driver {newest.driver})"
    ]
    skipped = sorted({_vt(t.cuda)[0] for t in within if t not in fits}, reverse=True)
    floors = ", ".join(
        f"CUDA {m} builds for compute capability {cuda_min_cc(m, kb)} and newer" for m in skipped
    )
    if not fits:
        return _fail(
            NAME,
            SUBJECT,
            f"no CUDA release driver {host.driver} runs builds for {gpu}: {floors}, and {gpu} is {cc}",
        )
    pick = fits[0]
    if pick is not newest:
        reasons.append(
            f"{floors}, and {gpu} is {cc}: the newest release for it is {release(pick)} (needs driver "
            f"{pick.driver})"
        )
    notes = [FIRST_CUDA_NOTE]
    if cuda_min_cc(_vt(pick.cuda)[0], kb) is None:
        notes.append(
            f"the knowledge tables give CUDA {_vt(pick.cuda)[0]} no oldest GPU, so {gpu} ({cc}) was not "
            "checked against it"
        )
    return Resolution(
        NAME, SUBJECT, True, base_cuda=release(pick), reasons=tuple(reasons), notes=tuple(notes)
    )
