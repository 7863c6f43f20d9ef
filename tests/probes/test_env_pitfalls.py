"""Environment pitfalls: variables read by name, judged against GPUs and interfaces in derive, and a policy's
[interconnect] requirements."""

from __future__ import annotations

import pytest

from gpudoctor.derive import derive
from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.loader import load_rules
from gpudoctor.engine.rule_tests import build_facts
from gpudoctor.host.base import HostError
from gpudoctor.policy import PolicyError, parse
from gpudoctor.probes import env_pitfalls, system
from gpudoctor.probes.env_pitfalls import (
    socket_ifname_matches,
    split_visible_devices,
    unmatched_visible_devices,
)

from conftest import fake_host


def test_variables_are_read_by_name_and_unset_is_not_set():
    host = fake_host(
        env={"CUDA_LAUNCH_BLOCKING": "1", "LD_PRELOAD": "/usr/lib/libjemalloc.so /opt/x/libcupti.so"}
    )
    facts = env_pitfalls.facts(host)
    assert facts["env.cuda_launch_blocking"].value == "1"
    assert facts["env.nccl_ib_disable"].unknown == "not set"
    assert facts["env.profiler_injection"].value == ["LD_PRELOAD=/opt/x/libcupti.so"]
    assert facts["env.profiler_injection_count"].value == 1
    # Only the names asked for were read: a snapshot never carries the rest of the environment.
    assert set(host.rec.env) <= set(env_pitfalls.VARIABLES)


def test_system_probe_carries_the_env_facts():
    facts = system.probe(fake_host(env={"CUDA_INJECTION64_PATH": "/opt/nsight/libToolsInjection64.so"}))
    assert facts["env.profiler_injection"].value == [
        "CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so"
    ]


class _NoEnv:
    def env(self, name):
        raise HostError("timed out", name)


def test_injection_unknown_when_a_variable_could_not_be_read():
    facts = env_pitfalls.facts(_NoEnv())
    assert facts["env.profiler_injection_count"].unknown == "timed out"
    assert facts["env.cuda_launch_blocking"].unknown == "timed out"


@pytest.mark.parametrize(
    ("value", "count", "uuids", "expected"),
    [
        ("0,1", 2, [], []),
        ("0,1,2,3", 2, [], ["2", "3"]),
        ("GPU-8932f937", 1, ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"], []),  # a unique prefix is enough
        ("GPU-deadbeef", 1, ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"], ["GPU-deadbeef"]),
        ("0,2,-1,7", 4, [], []),  # CUDA stops at -1: 7 is never read (the guide's own example)
        ("MIG-a1b2c3", 1, [], []),  # MIG device UUIDs are not among the GPUs': not judged
        ("0,,5", 2, [], []),  # an empty entry ends the list
        ("gpu0", 2, [], ["gpu0"]),
    ],
)
def test_unmatched_visible_devices(value, count, uuids, expected):
    assert unmatched_visible_devices(split_visible_devices(value), count, uuids) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("eth", 2),
        ("=eth0", 1),
        ("=eth0,eth1", 2),
        ("^docker", 3),
        ("^=docker0", 3),
        ("=eth2", 0),
        ("ens", 0),
    ],
)
def test_socket_ifname_follows_nccls_syntax(spec, expected):
    # NCCL env docs: "eth" prefix, "=eth0" exact, "^docker" exclude prefix, "^=docker0" exclude exact.
    assert socket_ifname_matches(spec, ["docker0", "eth0", "eth1", "lo"]) == expected


def test_derive_adds_the_env_judgements_and_leaves_them_out_when_a_probe_did_not_run():
    facts = derive(
        build_facts(
            {
                "gpus.count": 2,
                "gpus[0].uuid": "GPU-aaaa",
                "gpus[1].uuid": "GPU-bbbb",
                "env.cuda_visible_devices": "GPU-bbbb,3",
                "env.nccl_socket_ifname": "=ib0",
                "interconnect.net_interfaces": ["eth0", "lo"],
            }
        )
    )
    assert facts.value("env.cuda_visible_devices_unmatched") == ["3"]
    assert facts.value("env.cuda_visible_devices_unmatched_count") == 1
    assert facts.value("env.nccl_socket_ifname_matches") == 0
    preflight = derive(build_facts({"gpus.count": 2, "env.nccl_socket_ifname": "=ib0"}))
    assert "env.nccl_socket_ifname_matches" not in preflight
    unset = derive(build_facts({"gpus.count": 2, "env.cuda_visible_devices": {"unknown": "not set"}}))
    assert unset.get("env.cuda_visible_devices_unmatched_count").unknown == "not set"


def test_policy_interconnect_rules():
    policy = parse({"interconnect": {"ib_ports_active": 8, "ib_rate_gbps": 400}}, "gpudoctor.toml")
    given = {name: fact.value for name, fact in policy.facts.items()}
    rules = {r.id: r for r in load_rules([])}
    facts = build_facts(
        {
            **given,
            "interconnect.ib_ports_active": 1,
            "interconnect.ib_ports.count": 2,
            "interconnect.ib_ports[0].name": "mlx5_0/1",
            "interconnect.ib_ports[0].state": "ACTIVE",
            "interconnect.ib_ports[0].rate_gbps": 200.0,
            "interconnect.ib_ports[1].name": "mlx5_1/1",
            "interconnect.ib_ports[1].state": "DOWN",
            "interconnect.ib_ports[1].rate_gbps": 10.0,
        }
    )
    ports = evaluate_rule(rules["POLICY-IB-PORTS"], facts)
    assert [f.message for f in ports.findings] == [
        "The policy requires at least 8 active InfiniBand/RoCE port(s); 1 of 2 are active."
    ]
    rate = evaluate_rule(rules["POLICY-IB-RATE"], facts)
    assert [f.message for f in rate.findings] == [
        "RDMA port mlx5_0/1 runs at 200.0 Gb/s; the policy requires 400 Gb/s."
    ]
    met = build_facts(
        {
            **given,
            "interconnect.ib_ports_active": 8,
            "interconnect.ib_ports.count": 1,
            "interconnect.ib_ports[0].name": "mlx5_0/1",
            "interconnect.ib_ports[0].state": "ACTIVE",
            "interconnect.ib_ports[0].rate_gbps": 400.0,
        }
    )
    assert evaluate_rule(rules["POLICY-IB-PORTS"], met).status == "passed"
    assert evaluate_rule(rules["POLICY-IB-RATE"], met).status == "passed"


def test_policy_interconnect_validation():
    with pytest.raises(PolicyError) as e:
        parse({"interconnect": {"ib_ports_active": 0, "ib_rate_gbps": -1, "ib_speed": 1}}, "p.toml")
    assert e.value.problems == [
        "p.toml: interconnect.ib_speed: unknown key (expected one of: ib_ports_active, ib_rate_gbps)",
    ]
    with pytest.raises(PolicyError) as e:
        parse({"interconnect": {"ib_ports_active": 0, "ib_rate_gbps": -1}}, "p.toml")
    assert e.value.problems == [
        "p.toml: interconnect.ib_ports_active: expected 1 or more",
        "p.toml: interconnect.ib_rate_gbps: expected a positive rate in Gb/s, e.g. 400",
    ]
