"""Inputs the fuzz tests found that crashed gpudoctor, kept as plain examples: each one now gives a result,
an unknown fact or the project's own error. (Python 3.11+ refuses to convert strings of over 4,300 digits
to int, which is where many of these came from.)"""

from __future__ import annotations

import pytest

from gpudoctor.container import require as nvidia_require
from gpudoctor.engine import conditions, template, yamlsafe
from gpudoctor.engine.loader import parse_rules
from gpudoctor.facts import Fact, Facts
from gpudoctor.host.base import HostError, NvmlError
from gpudoctor.host.snapshot import MALFORMED
from gpudoctor.probes import container, cuda, driver, gpus, ldcache, libraries, python_env, system

from conftest import fake_host

DIGITS = "1" * 5000

RULE = """\
rules:
  - id: X-FUZZ-1
    title: t
    severity: info
    category: gpu
    message: m
    why: w
    when: {when}
"""


def problems_of(when: str) -> list[str]:
    rules, problems = parse_rules(RULE.format(when=when), "r.yaml")
    assert rules == []
    return [p.message for p in problems]


# --- rule files ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "doc, message",
    [
        ("a: 2001-13-45", "bad timestamp value '2001-13-45' (month must be in 1..12)"),
        ("2001-13-45: a", "bad timestamp value '2001-13-45' (month must be in 1..12)"),
        ("a: !!timestamp soon", "bad timestamp value 'soon'"),
        ("a: !!bool maybe", "bad bool value 'maybe'"),
        ("base: &b {x: 1}\nrules: {<<: *b}", "merge keys (<<) are not allowed in rule files"),
        ("!!python/name:os.system : 1", "unsupported tag tag:yaml.org,2002:python/name:os.system"),
    ],
)
def test_yaml_values_pyyaml_cannot_construct(doc, message):
    with pytest.raises(yamlsafe.YamlError) as info:
        yamlsafe.load(doc)
    assert info.value.message == message


def test_a_5000_digit_integer_in_yaml():
    with pytest.raises(yamlsafe.YamlError, match="bad int value '1111"):
        yamlsafe.load(f"a: {DIGITS}")


def test_condition_keys_mixing_numbers_and_strings():
    assert problems_of("{1: a, b: c}") == ["expected 'all', 'any', 'not' or 'fact', got [1, 'b']"]
    assert problems_of("{all: [], 1: a}") == ["'all' must stand alone in its mapping; found [1, 'all']"]


def test_a_version_too_long_for_int():
    assert problems_of(f"{{fact: driver.version, version_gt: '{DIGITS}'}}")[0].startswith(
        "'version_gt' expects a version"
    )
    assert conditions._version(DIGITS) is None


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 5000 + ")" * 5000])
def test_regexes_python_cannot_compile(pattern):
    # Python's re raised OverflowError and RecursionError on these; rule patterns run on RE2, which takes
    # the first as literal text and the second as it is, and searches both in linear time.
    errors: list = []
    conditions._validate_value("matches", pattern, "when.matches", None, errors)
    assert errors == []
    assert conditions._matches("a" * 10_000, pattern) in (True, False)


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "a{1001}", "("])
def test_regexes_re2_cannot_compile(pattern):
    errors: list = []
    conditions._validate_value("matches", pattern, "when.matches", None, errors)
    assert [e[0] for e in errors] == ["when.matches"]
    assert errors[0][1].startswith("not a valid regular expression: RE2 cannot compile it")


def test_an_unknown_key_that_looks_like_a_huge_index():
    # A key over 1024 characters must be written as an explicit key (?) in YAML.
    doc = RULE.format(when="{fact: driver.version, exists: true}") + f"    ? '[{DIGITS}]'\n    : 1\n"
    rules, problems = parse_rules(doc, "r.yaml")
    assert rules == [] and [p.line for p in problems] == [2] and problems[0].message.startswith("unknown key")


# --- evaluation ------------------------------------------------------------------------------------------


def test_contains_on_a_text_fact_with_a_number_is_unknown_not_a_crash():
    facts = Facts({"gpus.count": Fact(1, ""), "gpus[0].name": Fact("NVIDIA H200", "")})
    ev = conditions.Evaluation(facts, 0)
    assert ev({"fact": "gpus[i].name", "contains": 5}) is None
    assert ev({"fact": "gpus[i].name", "contains": "H200"}) is True


@pytest.mark.parametrize("max_cuda", ["²", "١٢.٠", DIGITS])
def test_nvidia_require_with_digits_int_refuses(max_cuda):
    facts = Facts({"driver.max_cuda": Fact(max_cuda, ""), "driver.version": Fact("580.1", "")})
    assert nvidia_require.satisfied("cuda>=12.4", facts)[0] is None
    # A wanted version past strtoumax is an invalid expression, which the runtime refuses.
    assert nvidia_require.satisfied(f"driver>={DIGITS}", facts)[0] is False


def test_size_of_an_integer_too_large_for_a_float():
    assert template.size(10**400) == f"{10**400} B"


# --- probes ---------------------------------------------------------------------------------------------


def test_library_versions_too_long_for_int():
    names = [f"libnvidia-ml.so.{DIGITS}.1", "libnvidia-ml.so.580.159.04", f"libcudnn.so.{DIGITS}"]
    assert ldcache.versioned_name(names, "libnvidia-ml.so.") == "580.159.04"
    assert libraries.versions_in_dir(names, "libcudnn.so.") == []
    assert libraries.newest_first([DIGITS, "9.1"]) == ["9.1", DIGITS]
    assert libraries.count_distinct([DIGITS, "9.1"]) == 2
    assert python_env.public_version(DIGITS + "+cu130") == DIGITS


def test_system_numbers_too_long_for_int():
    assert system.parse_size(DIGITS) is None
    assert system.parse_meminfo_total(f"MemTotal: {DIGITS} kB") is None
    assert system.parse_memlock(f"Max locked memory  {DIGITS}  {DIGITS}  bytes") is None


def test_cuda_version_json_nested_too_deep():
    assert cuda.parse_version_json("[" * 100_000) is None


@pytest.mark.parametrize(
    "dist",
    [
        {"name": "torch", "texts": [None]},
        {"name": "torch", "texts": {"torch/version.py": ["cuda = '12.4'"]}},
        {"name": "torch", "requires": True},
        {"name": "torch", "version": DIGITS},
        {"name": "onnxruntime-gpu", "texts": 5},
        {"name": "tensorflow", "texts": {"tensorflow/python/platform/build_info.py": 1}},
    ],
)
def test_framework_entries_of_the_wrong_shape(dist):
    (fw,) = python_env.frameworks({"distributions": [dist]})
    assert list(python_env._member(fw, "x")) == list(python_env.FRAMEWORK_FIELDS)


def test_a_cuda_version_int_cannot_read_is_an_unknown_major():
    dist = {"name": "torch", "texts": {"torch/version.py": "cuda = '²'"}}
    (fw,) = python_env.frameworks({"distributions": [dist]})
    assert not python_env._member(fw, "x")["cuda_major"].known


@pytest.mark.parametrize(
    "dump", [{"distributions": True}, {"distributions": [{"name": "nvidia-cudnn-cu12", "libs": 5}]}]
)
def test_pip_copies_of_a_malformed_dump(dump):
    assert libraries.pip_copies(dump, libraries.CUDNN[2], "libcudnn.so") == []
    assert python_env.installer(dump) == "pip"


# --- the snapshot Host: every answer has a live Host's shape ----------------------------------------------


@pytest.mark.parametrize(
    "parts, call",
    [
        ({"read_errors": {"/x": ["no"]}}, lambda h: h.read("/x")),
        ({"read_errors": {"/x": None}}, lambda h: h.read("/x")),
        ({"dirs": {"/d": True}}, lambda h: h.listdir("/d")),
        ({"dirs": {"/d": ["a", None]}}, lambda h: h.listdir("/d")),
        ({"dirs": {"/d": {"error": 5}}}, lambda h: h.listdir("/d")),
        (
            {"commands": [{"argv": ["ldconfig", "-p"], "rc": 0, "stdout": None}]},
            lambda h: h.run(("ldconfig", "-p")),
        ),
        (
            {"commands": [{"argv": ["ldconfig", "-p"], "rc": "0", "stdout": ""}]},
            lambda h: h.run(("ldconfig", "-p")),
        ),
        ({"commands": [{"argv": ["ldconfig", "-p"], "error": ["x"]}]}, lambda h: h.run(("ldconfig", "-p"))),
    ],
)
def test_malformed_snapshot_entries_fail_that_one_read(parts, call):
    with pytest.raises(HostError) as info:
        call(fake_host(**parts))
    assert info.value.reason == MALFORMED


def test_malformed_entries_leave_facts_unknown_not_crashed_probes():
    host = fake_host(
        read_errors={"/proc/driver/nvidia/version": ["x"], "/run/.containerenv": 3},
        dirs={"/sys/bus/pci/devices": [None, 1], "/": True},
        commands=[{"argv": ["ldconfig", "-p"], "rc": 0, "stdout": None}],
        nvml_system={"nvmlDeviceGetCount": 1},
        nvml_devices={"0": ["not", "a", "table"]},
    )
    facts = {**driver.probe(host), **gpus.probe(host), **container.probe(host)}
    assert facts["driver.kernel_version"].unknown == MALFORMED
    assert facts["pci.nvidia_gpus"].unknown == MALFORMED
    assert facts["gpus[0].name"].unknown == MALFORMED
    assert facts["container.detected"].unknown == MALFORMED


def test_a_malformed_nvml_device_table_fails_its_readings():
    with pytest.raises(HostError) as info:
        fake_host(nvml_devices={"0": [1, 2]}).nvml("nvmlDeviceGetName", device=0)
    assert info.value.reason == MALFORMED and not isinstance(info.value, NvmlError)


def test_an_absurd_gpu_count_is_unknown_not_a_long_loop():
    facts = gpus.probe(fake_host(nvml_system={"nvmlDeviceGetCount": 10**12}))
    assert facts == {"gpus.count": facts["gpus.count"]} and not facts["gpus.count"].known
