"""Leftovers before a job: processes holding GPUs, and MIG mode with no MIG device to run on.

Produces `gpu_processes.*` (every process NVML lists on any GPU, with whether it belongs to the job
gpudoctor runs in) and `gpu_mig.*` (MIG mode and the MIG devices of each GPU). Fast enough for `preflight`:
two process lists and at most eight MIG handles per GPU, plus a few small /proc files.

Which processes belong to this job (`same_job`), decided from what any user can read without privileges:

- gpudoctor itself and its ancestors (/proc/<pid>/stat, following the parent PIDs): the job script, the
  `srun` step, the container's entrypoint that runs `gpudoctor check --profile preflight && exec "$@"`;
- under Slurm, a process whose /proc/<pid>/cgroup names `job_<SLURM_JOB_ID>` (Slurm's cgroup plugins put
  every step of a job under that directory), so the other ranks of the same job are not leftovers;
- a process whose /proc/<pid>/cgroup is the same as gpudoctor's own (/proc/self/cgroup): the same container
  or systemd unit, except a login session's scope (`session-N.scope`), which is no job boundary: a
  notebook left running in the same login is still a leftover.

The NVIDIA driver numbers processes as the host's (initial) PID namespace does and does not translate them
into a container's (NVIDIA/nvidia-docker#1483, #179; still so with driver 535 in
NVIDIA/nvidia-container-toolkit#1013). So NVML's PIDs name processes in the /proc gpudoctor reads only when
that /proc numbers the initial PID namespace: on a host, in a VM (its own kernel), and in a container that
shares the host's PID namespace (`docker run --pid=host`). That is looked at, not assumed from being in a
container: /proc/2 is the kernel thread kthreadd in the initial namespace (init/main.c starts it second), and
kernel threads belong to no other PID namespace, so PID 2 here carrying PF_KTHREAD in its /proc/2/stat flags
is the evidence. Where /proc hides PID 2 (hidepid=, as some clusters mount it), gpudoctor's own namespace
says it instead: `readlink /proc/self/ns/pid` is "pid:[4026531836]" in the initial one, whose inode the
kernel fixes (PROC_PID_INIT_INO 0xEFFFFFFC, include/linux/proc_ns.h). Where PID 2 is an ordinary process
(a container's own PID namespace), NVML's PID 1234 is not process 1234 here: name and job are unknown with
that reason; where neither can be read, unknown too.
Comparing names with nvmlSystemGetProcessName would prove nothing: NVML reads the name from the same /proc
(mounting the host's /proc into a container makes nvidia-smi show names, nvidia-docker#1483).
"""

from __future__ import annotations

from typing import Any, Optional

from ..facts import Fact, FactSpec, known, list_facts, unknown
from ..host.base import NOT_FOUND, HostError, NvmlError
from . import EVERY_PROFILE, ProbeSpec
from .display import is_display_server
from .gpus import COUNT_SOURCE, nvml_gpu_count

FACT_SPECS: tuple[FactSpec, ...] = (
    FactSpec("gpu_processes.count", "int", "", "processes NVML lists on any GPU (compute and graphics)"),
    FactSpec("gpu_processes[].gpu", "int", "", "NVML index of the GPU the process holds"),
    FactSpec("gpu_processes[].pid", "int", "", "process ID as NVML reports it (the host's PID namespace)"),
    FactSpec("gpu_processes[].name", "str", "", "the process's name (/proc/<pid>/comm)"),
    FactSpec("gpu_processes[].type", "str", "", "`compute` or `graphics`: which NVML list named it"),
    FactSpec("gpu_processes[].used_bytes", "int", "bytes", "GPU memory the process holds"),
    FactSpec(
        "gpu_processes[].same_job",
        "bool",
        "",
        "the process belongs to the job gpudoctor runs in: it is gpudoctor or one of its ancestors, or its "
        "/proc/<pid>/cgroup names the Slurm job SLURM_JOB_ID names, or equals gpudoctor's own cgroup (not a "
        "login session's); unknown where /proc does not number processes as the host's PID namespace does "
        "(a container's own PID namespace), in which NVML's PIDs name no process",
    ),
    FactSpec(
        "gpu_processes[].display_server",
        "bool",
        "",
        "the process is a display server or desktop compositor (Xorg, gnome-shell, kwin_wayland ...: "
        "probes/display.py DISPLAY_SERVERS), by its name; the desktop's own, not a job's",
    ),
    FactSpec("gpu_mig.count", "int", "", "GPUs the MIG reading covers (every GPU NVML lists)"),
    FactSpec("gpu_mig[].index", "int", "", "NVML index"),
    FactSpec("gpu_mig[].name", "str", "", "product name"),
    FactSpec("gpu_mig[].enabled", "bool", "", "MIG mode is on now"),
    FactSpec(
        "gpu_mig[].devices",
        "int",
        "",
        "MIG devices (compute instances CUDA can use) on the GPU (nvmlDeviceGetMigDeviceHandleByIndex)",
    ),
)
# In preflight: a GPU another job still holds fails the job about to start (issue 11); two NVML lists per
# GPU and a few /proc files.
PROBE = ProbeSpec("gpu_processes", profiles=EVERY_PROFILE)

NVML_SRC = "nvml:nvmlDeviceGetComputeRunningProcesses"
PROCESS_LISTS = (
    ("compute", "nvmlDeviceGetComputeRunningProcesses"),
    ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
)
MAX_MIG_DEVICES = 8  # the most MIG devices any GPU has (nvmlDeviceGetMaxMigDeviceCount answers 7 on H100)
MAX_ANCESTORS = 64
MAX_PID = 1 << 22  # PID_MAX_LIMIT on 64-bit Linux
MAX_MEMORY_BYTES = 1 << 44
# include/linux/sched.h: PF_KTHREAD 0x00200000 "I am a kernel thread"
# (https://elixir.bootlin.com/linux/v6.13.3/source/include/linux/sched.h#L1695).
PF_KTHREAD = 0x00200000
KTHREADD_STAT = "/proc/2/stat"
READLINK_PID_NS = ("readlink", "/proc/self/ns/pid")  # readlink runs in gpudoctor's PID namespace
INIT_PID_NS = "pid:[4026531836]"  # PROC_PID_INIT_INO = 0xEFFFFFFCU (include/linux/proc_ns.h)
OTHER_NAMESPACE = (
    "PID {pid} from NVML is not a process in this PID namespace: the driver numbers processes as the "
    "host's namespace does, and this is another one ({evidence})"
)
UNTOLD = (
    "whether PID {pid} from NVML is a process here cannot be told: /proc/2/stat {why}, and "
    "/proc/self/ns/pid {why_ns} (they say whether this is the host's PID namespace)"
)
NOT_VISIBLE = (
    "process not visible here (it exited since NVML listed it, or /proc hides other users' processes)"
)


# --- pure parsers --------------------------------------------------------------------------------------


def parse_stat(text: str) -> tuple[int, int]:
    """(pid, parent pid) from /proc/<pid>/stat: "1234 (my (odd) name) S 1200 ..." (proc(5)); the name may
    hold spaces and parentheses, so the fields after it are found from the last ')'."""
    head, _, rest = text.rpartition(")")
    pid = int(head.split("(", 1)[0])
    return pid, int(rest.split()[1])


def stat_flags(text: str) -> int:
    """The kernel flags word of /proc/<pid>/stat, its field 9 (proc(5)), found from the last ')'."""
    return int(text.rpartition(")")[2].split()[6])


def cgroup_paths(text: str) -> tuple[str, ...]:
    """The cgroup paths of /proc/<pid>/cgroup lines "hierarchy-ID:controllers:path" (v2: "0::/path")."""
    return tuple(line.split(":", 2)[2] for line in text.splitlines() if line.count(":") >= 2)


def in_slurm_job(cgroup: str, job_id: str) -> bool:
    """Whether a cgroup path names Slurm job `job_id`: .../job_<id>/step_<s>/... (cgroup v1 and v2)."""
    want = f"job_{job_id}"
    return any(want in path.split("/") for path in cgroup_paths(cgroup))


def login_session(cgroup: str) -> bool:
    """A systemd login session's scope (/user.slice/user-1000.slice/session-3.scope): not a job."""
    return any(
        part.startswith("session-") and part.endswith(".scope")
        for path in cgroup_paths(cgroup)
        for part in path.split("/")
    )


def same_job(
    pid: int,
    ancestors: set[int],
    cgroup: Optional[str],
    own_cgroup: Optional[str],
    slurm_job: Optional[str],
) -> Optional[bool]:
    """Whether process `pid` (cgroup text `cgroup`, None when unreadable) is part of gpudoctor's job."""
    if pid in ancestors:
        return True
    if cgroup is None:
        return None
    if slurm_job and in_slurm_job(cgroup, slurm_job):
        return True
    if own_cgroup is not None and cgroup_paths(cgroup) == cgroup_paths(own_cgroup):
        return not login_session(own_cgroup)
    return False


def processes(value: Any) -> list[tuple[int, Optional[int]]]:
    """[(pid, used bytes or None)] from pynvml's process list ({"pid", "usedGpuMemory"} each; pynvml gives
    None where NVML says NVML_VALUE_NOT_AVAILABLE)."""
    out = []
    for entry in value:
        pid = entry["pid"]
        used = entry.get("usedGpuMemory")
        if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid <= MAX_PID:
            raise ValueError(f"implausible pid {pid!r}")
        if not (isinstance(used, int) and 0 <= used <= MAX_MEMORY_BYTES):
            used = None
        out.append((pid, used))
    return out


# --- probe ----------------------------------------------------------------------------------------------


def _read(host: Any, path: str) -> Optional[str]:
    try:
        return host.read(path)
    except HostError:
        return None


def _ancestors(host: Any) -> set[int]:
    """gpudoctor's PID and its ancestors' (as far as /proc lets us follow them)."""
    found: set[int] = set()
    path = "/proc/self/stat"
    for _ in range(MAX_ANCESTORS):
        text = _read(host, path)
        if text is None:
            break
        try:
            pid, parent = parse_stat(text)
        except (ValueError, IndexError):
            break
        found.add(pid)
        if parent <= 0 or parent in found:
            break
        path = f"/proc/{parent}/stat"
    return found


def host_numbering(host: Any) -> tuple[Optional[bool], str]:
    """Whether the /proc gpudoctor reads numbers processes as the host's PID namespace does, the numbering
    of NVML's PIDs: (True, ""); (False, the evidence); or (None, why it cannot be told)."""
    try:
        text = host.read(KTHREADD_STAT)
    except HostError as e:
        why = e.reason
    else:
        try:
            if stat_flags(text) & PF_KTHREAD:
                return True, ""
            return False, "PID 2 here is no kernel thread"
        except (ValueError, IndexError):
            why = f"is not as proc(5) describes it: {text[:40]!r}"
    link, why_ns = _pid_namespace(host)
    if link is None:
        return None, UNTOLD.replace("{why}", why).replace("{why_ns}", why_ns)
    if link == INIT_PID_NS:
        return True, ""
    return False, f"/proc/2/stat {why}, and /proc/self/ns/pid is {link}"


def _pid_namespace(host: Any) -> tuple[Optional[str], str]:
    """gpudoctor's PID namespace as the link /proc/self/ns/pid names it ("pid:[4026531836]"), or (None, why
    it could not be read)."""
    try:
        result = host.run(READLINK_PID_NS)
    except HostError as e:
        return None, e.reason
    link = result.stdout.strip()
    if result.rc != 0 or not (link.startswith("pid:[") and link.endswith("]")):
        return None, f"gave {(result.stderr or link)[:40]!r}"
    return link, ""


def probe(host: Any) -> dict[str, Fact]:
    count = nvml_gpu_count(host)
    if isinstance(count, Fact):  # no driver: no GPU, so no process holds one; or the count is unknown
        return {"gpu_processes.count": count, "gpu_mig.count": count}
    facts = _processes(host, count)
    facts.update(list_facts("gpu_mig", [_mig(host, i) for i in range(count)], COUNT_SOURCE))
    return facts


def _processes(host: Any, count: int) -> dict[str, Fact]:
    found: list[tuple[int, str, int, Optional[int]]] = []  # (gpu, type, pid, used bytes)
    for gpu in range(count):
        for kind, function in PROCESS_LISTS:
            src = f"nvml:{function}"
            try:
                listed = processes(host.nvml(function, device=gpu))
            except HostError as e:
                # One GPU's list missing leaves the whole list unknown: a partial list would read as complete.
                return {"gpu_processes.count": unknown(f"GPU {gpu}: {e.reason}", src)}
            except (TypeError, KeyError, ValueError, AttributeError) as e:
                return {"gpu_processes.count": unknown(f"GPU {gpu}: unexpected value ({e})"[:80], src)}
            found += [(gpu, kind, pid, used) for pid, used in listed]
    if not found:
        return list_facts("gpu_processes", [], NVML_SRC)
    numbering, why = host_numbering(host)
    if not numbering:
        reason = why if numbering is None else OTHER_NAMESPACE.replace("{evidence}", why)
        return list_facts(
            "gpu_processes", [_unresolved(g, k, p, u, reason) for g, k, p, u in found], NVML_SRC
        )
    ancestors = _ancestors(host)
    own_cgroup = _read(host, "/proc/self/cgroup")
    try:
        slurm_job = host.env("SLURM_JOB_ID")
    except HostError:
        slurm_job = None
    members = []
    for gpu, kind, pid, used in found:
        members.append(_member(host, gpu, kind, pid, used, ancestors, own_cgroup, slurm_job))
    return list_facts("gpu_processes", members, NVML_SRC)


def _listed(gpu: int, kind: str, pid: int, used: Optional[int]) -> dict[str, Fact]:
    """What NVML says of a process: its GPU, PID, type and memory."""
    nvml_src = "nvml:nvmlDeviceGet{}RunningProcesses".format("Compute" if kind == "compute" else "Graphics")
    return {
        "gpu": known(gpu, nvml_src),
        "pid": known(pid, nvml_src),
        "type": known(kind, nvml_src),
        "used_bytes": known(used, nvml_src) if used is not None else unknown("not available", nvml_src),
    }


def _unresolved(gpu: int, kind: str, pid: int, used: Optional[int], reason: str) -> dict[str, Fact]:
    """A process whose PID cannot be looked up here: its name and job unknown, with why."""
    member = _listed(gpu, kind, pid, used)
    why = reason.replace("{pid}", str(pid))
    member["name"] = unknown(why, f"{KTHREADD_STAT}, /proc/{pid}/comm")
    member["display_server"] = unknown(why, f"{KTHREADD_STAT}, /proc/{pid}/comm")
    member["same_job"] = unknown(why, f"{KTHREADD_STAT}, /proc/{pid}/cgroup")
    return member


def _member(
    host: Any,
    gpu: int,
    kind: str,
    pid: int,
    used: Optional[int],
    ancestors: set[int],
    own_cgroup: Optional[str],
    slurm_job: Optional[str],
) -> dict[str, Fact]:
    comm, cgroup = f"/proc/{pid}/comm", f"/proc/{pid}/cgroup"
    member = _listed(gpu, kind, pid, used)
    try:
        member["name"] = known(host.read(comm).strip(), comm)
    except HostError as e:
        member["name"] = unknown(NOT_VISIBLE if e.reason == NOT_FOUND else e.reason, comm)
    name = member["name"]
    member["display_server"] = (
        known(is_display_server(str(name.value)), comm) if name.known else unknown(name.unknown, comm)
    )
    try:
        text: Optional[str] = host.read(cgroup)
        why = ""
    except HostError as e:
        text, why = None, (NOT_VISIBLE if e.reason == NOT_FOUND else e.reason)
    verdict = same_job(pid, ancestors, text, own_cgroup, slurm_job)
    sources = f"{cgroup}, /proc/self/stat, /proc/self/cgroup, env:SLURM_JOB_ID"
    member["same_job"] = unknown(why, cgroup) if verdict is None else known(verdict, sources)
    return member


def _mig(host: Any, index: int) -> dict[str, Fact]:
    src = "nvml:nvmlDeviceGetMigMode"
    out: dict[str, Fact] = {"index": known(index, "nvml:nvmlDeviceGetCount")}
    try:
        out["name"] = known(str(host.nvml("nvmlDeviceGetName", device=index)), "nvml:nvmlDeviceGetName")
    except HostError as e:
        out["name"] = unknown(e.reason, "nvml:nvmlDeviceGetName")
    try:
        mode = host.nvml("nvmlDeviceGetMigMode", device=index)
        enabled = mode[0] == 1
    except HostError as e:
        out["enabled"] = out["devices"] = unknown(e.reason, src)
        return out
    except (TypeError, IndexError, KeyError):
        out["enabled"] = out["devices"] = unknown(f"unexpected value {mode!r}"[:80], src)
        return out
    out["enabled"] = known(enabled, src)
    out["devices"] = _mig_devices(host, index) if enabled else known(0, src)
    return out


def _mig_devices(host: Any, index: int) -> Fact:
    """MIG devices on a GPU in MIG mode: the indexes below nvmlDeviceGetMaxMigDeviceCount that answer a
    handle; NVML_ERROR_NOT_FOUND means no MIG device at that index (nvml.h)."""
    src = "nvml:nvmlDeviceGetMigDeviceHandleByIndex"
    try:
        most = host.nvml("nvmlDeviceGetMaxMigDeviceCount", device=index)
    except HostError as e:
        return unknown(e.reason, "nvml:nvmlDeviceGetMaxMigDeviceCount")
    if not isinstance(most, int) or isinstance(most, bool) or not 0 <= most <= MAX_MIG_DEVICES:
        return unknown(f"unexpected value {most!r}"[:80], "nvml:nvmlDeviceGetMaxMigDeviceCount")
    devices = 0
    for i in range(most):
        try:
            host.nvml("nvmlDeviceGetMigDeviceHandleByIndex", device=index, arg=str(i))
            devices += 1
        except NvmlError as e:
            if not e.name.endswith("NotFound"):
                return unknown(e.reason, src)
        except HostError as e:
            return unknown(e.reason, src)
    return known(devices, src)
