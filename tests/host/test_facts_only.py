"""A node known from its report: every question about its files, commands and NVML is unknown, with why."""

from __future__ import annotations

import pytest

from gpudoctor.host.base import HostError
from gpudoctor.host.facts_only import FROM_REPORT, FactsOnlyHost


def test_every_question_about_the_node_is_unknown_with_the_reason():
    host = FactsOnlyHost()
    for ask in (
        lambda: host.read("/proc/driver/nvidia/version"),
        lambda: host.listdir("/usr/local"),
        lambda: host.run(("ldconfig", "-p")),
        lambda: host.nvml("nvmlInit"),
        lambda: host.python(),
        lambda: host.framework_runtime("python3", "torch"),
    ):
        with pytest.raises(HostError) as e:
            ask()
        assert e.value.reason == FROM_REPORT
    assert (host.env("PATH"), host.env_names("NVIDIA_"), host.python_targets(), host.kind) == (
        None,
        [],
        [],
        "report",
    )
