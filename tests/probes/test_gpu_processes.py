"""The leftovers probe (gpudoctor/probes/gpu_processes.py): who holds a GPU, and whether it is this job."""

from __future__ import annotations

import pytest

from gpudoctor.probes import gpu_processes
from gpudoctor.probes.gpu_processes import in_slurm_job, login_session, parse_stat, same_job

from conftest import fake_host

# /proc/<pid>/stat as proc(5) documents it; a name may hold spaces and parentheses.
STAT = "4242 (python (worker) 3) S 4200 4242 4200 0 -1 4194560 1200 0 0 0 5 2 0 0 20 0 1 0 100 0 0"
# cgroup v2 paths under Slurm's cgroup plugin: slurmstepd.scope/job_<id>/step_<n>/user/task_<t>.
SLURM_V2 = "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n"
SLURM_OTHER_STEP = "0::/system.slice/slurmstepd.scope/job_1234/step_batch/user/task_0\n"
SLURM_OTHER_JOB = "0::/system.slice/slurmstepd.scope/job_999/step_0/user/task_0\n"
SESSION = "0::/user.slice/user-1000.slice/session-3.scope\n"
DOCKER_UNIT = "0::/system.slice/docker-0123abcd.scope\n"


def test_parse_stat_finds_the_parent_after_an_odd_name():
    assert parse_stat(STAT) == (4242, 4200)


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


def _host(procs, files, env=None, gpus=1, mig=(0, 0), read_errors=None):
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
        dirs={"/": ["usr", "proc"]},
        env=env or {},
    )


SELF = {"/proc/self/stat": "300 (gpudoctor) R 200 300 200 0", "/proc/200/stat": "200 (bash) S 1 200 200 0"}


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
    assert facts["gpu_processes[0].used_bytes"].unknown == "not available"


def test_in_a_container_host_pids_are_not_resolved():
    files = dict(SELF)
    files.update({"/proc/4242/comm": "init\n", "/proc/4242/cgroup": DOCKER_UNIT, "/run/.containerenv": ""})
    facts = gpu_processes.probe(_host([{"pid": 4242, "usedGpuMemory": 7}], files))
    assert facts["gpu_processes[0].name"].unknown == gpu_processes.IN_CONTAINER
    assert facts["gpu_processes[0].same_job"].unknown == gpu_processes.IN_CONTAINER


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
