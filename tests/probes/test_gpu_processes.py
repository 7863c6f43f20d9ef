"""The leftovers probe (gpudoctor/probes/gpu_processes.py): who holds a GPU, and whether it is this job."""

from __future__ import annotations

import pytest

from gpudoctor.probes import gpu_processes
from gpudoctor.probes.gpu_processes import in_slurm_job, login_session, parse_stat, same_job, stat_flags

from conftest import fake_host

# /proc/<pid>/stat as proc(5) documents it; a name may hold spaces and parentheses.
STAT = "4242 (python (worker) 3) S 4200 4242 4200 0 -1 4194560 1200 0 0 0 5 2 0 0 20 0 1 0 100 0 0"
# cgroup v2 paths under Slurm's cgroup plugin: slurmstepd.scope/job_<id>/step_<n>/user/task_<t>.
SLURM_V2 = "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n"
SLURM_OTHER_STEP = "0::/system.slice/slurmstepd.scope/job_1234/step_batch/user/task_0\n"
SLURM_OTHER_JOB = "0::/system.slice/slurmstepd.scope/job_999/step_0/user/task_0\n"
SESSION = "0::/user.slice/user-1000.slice/session-3.scope\n"
DOCKER_UNIT = "0::/system.slice/docker-0123abcd.scope\n"
# /proc/2/stat read on 2026-12-05 on a Linux 6.18.44 machine (proc(5) format): on the host, PID 2 is the
# kernel thread kthreadd, flags 2129984 = 0x208040, PF_KTHREAD (0x00200000) set ...
KTHREADD = (
    "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 25 0 0 18446744073709551615 0 0 0 0 0 0 0 "
    "2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
)
# ... and on the same machine inside a PID namespace of its own (`unshare -U -r -p -f --mount-proc`), PID 2
# is an ordinary process, flags 4194304 = 0x400000 (PF_RANDOMIZE), no PF_KTHREAD.
NESTED = (
    "2 (python3) S 1 0 0 0 -1 4194304 2838 6518 2 0 2 1 4 0 20 0 1 0 133326 16961536 3305 "
    "18446744073709551615 94665478430720 94665478431061 140727769956144 0 0 0 0 16781318 0 1 0 0 17 1 0 0 0 "
    "0 0 94665478442416 94665478443032 94665509707776 140727769958626 140727769958697 140727769958697 "
    "140727769960399 0"
)


def test_parse_stat_finds_the_parent_after_an_odd_name():
    assert parse_stat(STAT) == (4242, 4200)


def test_stat_flags_is_field_nine():
    assert stat_flags(KTHREADD) == 2129984 and stat_flags(KTHREADD) & gpu_processes.PF_KTHREAD
    assert stat_flags(NESTED) == 4194304 and not stat_flags(NESTED) & gpu_processes.PF_KTHREAD
    assert stat_flags(STAT) == 4194560  # after a name holding spaces and parentheses


def test_slurm_job_matches_a_path_component_only():
    assert in_slurm_job(SLURM_OTHER_STEP, "1234")
    assert not in_slurm_job(SLURM_OTHER_JOB, "1234")
    assert not in_slurm_job("0::/system.slice/slurmstepd.scope/job_12345/step_0\n", "1234")


def test_login_session_is_not_a_job():
    assert login_session(SESSION)
    assert not login_session(SLURM_V2)


@pytest.mark.parametrize(
    "pid, cgroup, own, slurm, expected",
    [
        (10, None, None, None, True),  # an ancestor, whatever else is known
        (4242, SLURM_OTHER_STEP, SLURM_V2, "1234", True),  # another step of the same Slurm job
        (4242, SLURM_OTHER_JOB, SLURM_V2, "1234", False),  # another job's rank
        (4242, DOCKER_UNIT, DOCKER_UNIT, None, True),  # the same container
        (4242, SESSION, SESSION, None, False),  # a notebook left in the same login
        (4242, DOCKER_UNIT, SESSION, None, False),
        (4242, None, SESSION, None, None),  # unreadable: unknown, never "not a leftover"
    ],
)
def test_same_job(pid, cgroup, own, slurm, expected):
    assert same_job(pid, {1, 10, 20}, cgroup, own, slurm) is expected


def _host(procs, files, env=None, gpus=1, mig=(0, 0), read_errors=None, root=("usr", "proc"), commands=()):
    devices = {
        str(i): {
            "nvmlDeviceGetComputeRunningProcesses": procs if i == 0 else [],
            "nvmlDeviceGetGraphicsRunningProcesses": [],
            "nvmlDeviceGetName": "NVIDIA H100 80GB HBM3",
            "nvmlDeviceGetMigMode": list(mig),
        }
        for i in range(gpus)
    }
    return fake_host(
        nvml_system={"nvmlDeviceGetCount": gpus},
        nvml_devices=devices,
        files=files,
        read_errors=read_errors or {},
        dirs={"/": list(root)},
        commands=list(commands),
        env=env or {},
    )


SELF = {
    "/proc/self/stat": "300 (gpudoctor) R 200 300 200 0",
    "/proc/200/stat": "200 (bash) S 1 200 200 0",
    "/proc/2/stat": KTHREADD,
}


def test_a_process_of_another_job_is_a_leftover():
    files = dict(SELF)
    files.update(
        {"/proc/self/cgroup": SLURM_V2, "/proc/4242/comm": "python3\n", "/proc/4242/cgroup": SLURM_OTHER_JOB}
    )
    facts = gpu_processes.probe(
        _host([{"pid": 4242, "usedGpuMemory": 1 << 30}], files, {"SLURM_JOB_ID": "1234"})
    )
    assert facts["gpu_processes.count"].value == 1
    assert facts["gpu_processes[0].name"].value == "python3"
    assert facts["gpu_processes[0].used_bytes"].value == 1 << 30
    assert facts["gpu_processes[0].same_job"].value is False
    assert facts["gpu_processes[0].display_server"].value is False


def test_the_desktops_display_server_is_named_by_its_comm():
    # /proc/<pid>/comm of Xorg as the kernel truncates it (15 characters; NVIDIA/nvidia-docker#1264's
    # nvidia-smi shows /usr/lib/xorg/Xorg, pid 1248)
    files = {
        **SELF,
        "/proc/self/cgroup": SLURM_V2,
        "/proc/1248/comm": "Xorg\n",
        "/proc/1248/cgroup": "0::/\n",
    }
    facts = gpu_processes.probe(_host([{"pid": 1248, "usedGpuMemory": 29360128}], files))
    assert facts["gpu_processes[0].display_server"].value is True


def test_a_busy_gpu_inside_this_job_is_not_a_leftover():
    files = dict(SELF)
    files.update(
        {"/proc/self/cgroup": SLURM_V2, "/proc/4242/comm": "python3\n", "/proc/4242/cgroup": SLURM_OTHER_STEP}
    )
    facts = gpu_processes.probe(
        _host([{"pid": 4242, "usedGpuMemory": 1 << 30}], files, {"SLURM_JOB_ID": "1234"})
    )
    assert facts["gpu_processes[0].same_job"].value is True
    # gpudoctor's own parent (the job script) holding the GPU is part of the job too.
    facts = gpu_processes.probe(
        _host([{"pid": 200, "usedGpuMemory": 5}], {**files, "/proc/200/comm": "bash\n"})
    )
    assert facts["gpu_processes[0].same_job"].value is True


def test_a_process_that_vanished_is_unknown_not_fine():
    gone = {"/proc/4242/comm": "not found", "/proc/4242/cgroup": "not found"}
    facts = gpu_processes.probe(_host([{"pid": 4242, "usedGpuMemory": None}], dict(SELF), read_errors=gone))
    assert facts["gpu_processes[0].name"].unknown == gpu_processes.NOT_VISIBLE
    assert facts["gpu_processes[0].same_job"].unknown == gpu_processes.NOT_VISIBLE
    assert facts["gpu_processes[0].display_server"].unknown == gpu_processes.NOT_VISIBLE
    assert facts["gpu_processes[0].used_bytes"].unknown == "not available"


def test_a_container_sharing_the_host_pid_namespace_is_judged():
    # `docker run --pid=host`: /.dockerenv is there, but /proc is the host's (PID 2 is kthreadd), so NVML's
    # PID 4242 is process 4242 here, a python3 in another container: a leftover, judged as on the host.
    files = dict(SELF, **{"/proc/self/cgroup": DOCKER_UNIT})
    other = "0::/system.slice/docker-89efcdab.scope\n"
    files.update({"/proc/4242/comm": "python3\n", "/proc/4242/cgroup": other})
    facts = gpu_processes.probe(
        _host([{"pid": 4242, "usedGpuMemory": 7}], files, root=(".dockerenv", "proc"))
    )
    assert facts["gpu_processes[0].name"].value == "python3"
    assert facts["gpu_processes[0].same_job"].value is False
    # The same container's own process on the GPU is part of the job.
    files["/proc/4242/cgroup"] = DOCKER_UNIT
    facts = gpu_processes.probe(
        _host([{"pid": 4242, "usedGpuMemory": 7}], files, root=(".dockerenv", "proc"))
    )
    assert facts["gpu_processes[0].same_job"].value is True


def test_in_a_pid_namespace_of_its_own_nvml_pids_are_not_looked_up():
    # A container with its own PID namespace: PID 2 here is no kernel thread, so NVML's (host) PID 4242 is not
    # process 4242 here, even though a /proc/4242 exists (another process that happens to have that number).
    files = dict(SELF, **{"/proc/2/stat": NESTED})
    files.update(
        {"/proc/4242/comm": "init\n", "/proc/4242/cgroup": DOCKER_UNIT, "/proc/self/cgroup": DOCKER_UNIT}
    )
    facts = gpu_processes.probe(_host([{"pid": 4242, "usedGpuMemory": 7}], files))
    why = (
        "PID 4242 from NVML is not a process in this PID namespace: the driver numbers processes as the "
        "host's namespace does, and this is another one (PID 2 here is no kernel thread)"
    )
    assert facts["gpu_processes[0].name"].unknown == why
    assert facts["gpu_processes[0].same_job"].unknown == why
    assert facts["gpu_processes[0].used_bytes"].value == 7  # what NVML says stays known
    assert facts["gpu_processes[0].name"].source == "/proc/2/stat, /proc/4242/comm"


def readlink(stdout: str) -> dict:
    """`readlink /proc/self/ns/pid` as the Host records a command."""
    return {"argv": ["readlink", "/proc/self/ns/pid"], "rc": 0, "stdout": stdout, "stderr": ""}


# What `readlink /proc/self/ns/pid` printed on the same machine on 2026-12-05, on the host (the kernel's
# PROC_PID_INIT_INO, 0xEFFFFFFC) and inside `unshare -U -r -p -f --mount-proc`.
HOST_NS, NESTED_NS = "pid:[4026531836]\n", "pid:[4026532176]\n"


def test_where_proc_hides_pid_2_gpudoctor_s_own_pid_namespace_says_it():
    # /proc mounted with hidepid=2: root's kthreadd is not visible (not found), this user's processes are.
    files = {k: v for k, v in SELF.items() if k != "/proc/2/stat"}
    files.update(
        {"/proc/self/cgroup": SLURM_V2, "/proc/4242/comm": "python3\n", "/proc/4242/cgroup": SLURM_OTHER_JOB}
    )
    hidden = {"/proc/2/stat": "not found"}
    procs = [{"pid": 4242, "usedGpuMemory": 7}]
    env = {"SLURM_JOB_ID": "1234"}
    facts = gpu_processes.probe(_host(procs, files, env, read_errors=hidden, commands=[readlink(HOST_NS)]))
    assert facts["gpu_processes[0].same_job"].value is False  # the host's namespace: judged
    facts = gpu_processes.probe(_host(procs, files, env, read_errors=hidden, commands=[readlink(NESTED_NS)]))
    assert facts["gpu_processes[0].same_job"].unknown == (
        "PID 4242 from NVML is not a process in this PID namespace: the driver numbers processes as the "
        "host's namespace does, and this is another one (/proc/2/stat not found, and /proc/self/ns/pid is "
        "pid:[4026532176])"
    )


def test_where_neither_can_be_read_it_is_unknown_not_guessed():
    files = {k: v for k, v in SELF.items() if k != "/proc/2/stat"}
    files.update({"/proc/4242/comm": "python3\n", "/proc/4242/cgroup": SLURM_OTHER_JOB})
    failed = {"argv": ["readlink", "/proc/self/ns/pid"], "error": "no permission"}
    host = _host(
        [{"pid": 4242, "usedGpuMemory": 7}],
        files,
        read_errors={"/proc/2/stat": "not found"},
        commands=[failed],
    )
    facts = gpu_processes.probe(host)
    assert facts["gpu_processes[0].same_job"].unknown == (
        "whether PID 4242 from NVML is a process here cannot be told: /proc/2/stat not found, and "
        "/proc/self/ns/pid no permission (they say whether this is the host's PID namespace)"
    )


def test_a_list_nvml_cannot_give_leaves_the_whole_list_unknown():
    host = fake_host(
        nvml_system={"nvmlDeviceGetCount": 2},
        nvml_devices={
            "0": {"nvmlDeviceGetComputeRunningProcesses": [], "nvmlDeviceGetGraphicsRunningProcesses": []},
            "1": {"nvmlDeviceGetComputeRunningProcesses": {"error": "NVMLError_NoPermission"}},
        },
    )
    facts = gpu_processes.probe(host)
    assert facts["gpu_processes.count"].unknown == "GPU 1: no permission"


def test_no_process_is_an_empty_list():
    facts = gpu_processes.probe(_host([], {}))
    assert facts["gpu_processes.count"].value == 0
    assert facts["gpu_mig[0].enabled"].value is False
    assert facts["gpu_mig[0].devices"].value == 0
