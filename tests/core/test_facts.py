"""gpudoctor/facts.py: the Facts tree on the real H200 capture (tests/fixtures/h200-driver580-snapshot), what
an unread fact reads as, list flattening, the JSON tree, and the inputs of derived facts."""

from __future__ import annotations

import pytest

from gpudoctor.facts import (
    LISTS,
    SCHEMA,
    Facts,
    Inputs,
    collected,
    head,
    known,
    list_facts,
    spec_for,
    spec_name,
    unknown,
)
from gpudoctor.host.base import Deadline
from gpudoctor.host.snapshot import SnapshotHost, load
from gpudoctor.pipeline.check import run_check

from conftest import H200


@pytest.fixture(scope="module")
def h200() -> Facts:
    return run_check(SnapshotHost(load(str(H200)), "h200"), "h200", Deadline(10), []).facts


def test_names_map_to_their_declaration_and_section():
    assert spec_name("gpus[3].pcie.gen_current") == "gpus[].pcie.gen_current"
    assert head("gpus[3].pcie.gen_current") == "gpus" and head("driver.version") == "driver"
    spec = spec_for("gpus[12].pcie.gen_current")
    assert spec is not None and spec.name == "gpus[].pcie.gen_current" and spec.type == "int"
    assert spec_for("gpus[0].no_such_fact") is None


def test_every_fact_of_the_h200_capture_is_declared(h200):
    undeclared = [path for path, _ in h200.items() if spec_for(path) is None]
    assert undeclared == []
    assert len(SCHEMA) == len({s.name for s in SCHEMA})  # each fact declared once


def test_the_h200_capture_reads_as_its_readme_says(h200):
    # tests/fixtures/h200-driver580-snapshot/README.md: driver 580.159.04, one H200, in a container.
    assert h200.value("driver.version") == "580.159.04"
    assert h200.count("gpus") == 1 and h200.value("gpus[0].name") == "NVIDIA H200"
    assert h200.get("driver.version").known and h200.get("driver.version").source


def test_a_fact_no_probe_produced_is_unknown_with_the_reason_its_section_is_missing():
    facts = Facts({"driver.version": known("580.159.04", "nvml")}, missing={"gpus": "timed out after 10 s"})
    assert facts.get("gpus[0].name").unknown == "timed out after 10 s"
    assert facts.get("python.version").unknown == "not collected"
    assert facts.value("gpus[0].name", "fallback") == "fallback"
    assert facts.count("gpus") == 0 and "gpus.count" not in facts


def test_an_unknown_fact_has_no_value_and_a_count_that_is_not_a_number_counts_nothing():
    facts = Facts({"gpus.count": unknown("NVML not loaded", "nvml"), "cudnn.count": known("2", "x")})
    assert facts.value("gpus.count", 7) == 7
    assert facts.count("gpus") == 0 and facts.count("cudnn") == 0


def test_list_members_flatten_with_their_count():
    members = [{"name": known("NVIDIA H200", "nvml")}, {"name": unknown("GPU is lost", "nvml")}]
    flat = list_facts("gpus", members, "nvml")
    assert sorted(flat) == ["gpus.count", "gpus[0].name", "gpus[1].name"]
    assert flat["gpus.count"].value == 2 and flat["gpus[1].name"].unknown == "GPU is lost"


def test_items_sort_list_members_by_number_not_by_text():
    facts = Facts(list_facts("gpus", [{"index": known(i, "nvml")} for i in range(11)], "nvml"))
    order = [path for path, _ in facts.items()]
    assert order.index("gpus[2].index") < order.index("gpus[10].index")


def test_the_tree_holds_every_known_value_where_its_name_points(h200):
    tree = h200.tree()
    for path, fact in h200.items():
        is_count = path.endswith(".count") and path[: -len(".count")] in LISTS
        node = tree
        for piece in path.replace("]", "").replace("[", ".").split(".")[: -1 if is_count else None]:
            node = node[int(piece)] if isinstance(node, list) else node[piece]
        if is_count and not fact.known:  # a list whose count is unknown is never an empty array
            assert node == {"unknown": fact.unknown}, path
        elif is_count:  # a list's count is its length
            assert isinstance(node, list) and len(node) == fact.value, path
        elif fact.known:
            assert node == fact.value, path
        else:
            assert node == {"unknown": fact.unknown}, path


def test_the_tree_never_shows_an_unknown_list_or_a_missing_section_as_empty():
    facts = Facts(
        {"gpus.count": unknown("NVML not loaded", "nvml"), "cudnn.installs.count": known(0, "scan")},
        missing={"python": "the interpreter did not answer in 10 s"},
    )
    assert facts.tree() == {
        "python": {"unknown": "the interpreter did not answer in 10 s"},
        "gpus": {"unknown": "NVML not loaded"},
        "cudnn": {"installs": []},
    }


def test_a_derived_fact_is_unknown_with_its_first_input_s_reason():
    facts = Facts({"gpus.count": unknown("NVML not loaded", "nvml"), "driver.version": unknown("no driver")})
    # compute runs only when every input was known: here it is never called, the first reason is kept
    inputs = Inputs(facts)
    inputs("gpus.count"), inputs("driver.version")
    result = inputs.result(lambda: pytest.fail("computed from unknown inputs"))
    assert result.unknown == "NVML not loaded"
    assert result.source == "derived:gpus.count, driver.version"


def test_a_derived_fact_that_cannot_be_computed_says_why():
    facts = Facts({"gpus.count": known(0, "nvml"), "gpus.total": known(8, "nvml")})
    inputs = Inputs(facts)
    total, count = inputs("gpus.total"), inputs("gpus.count")
    result = inputs.result(lambda: (total / count, None))
    assert (result.known, result.unknown) == (False, "cannot be computed: division by zero")
    ok = Inputs(facts)
    n = ok("gpus.total")
    assert ok.result(lambda: (n * 2, None)) == known(16, "derived:gpus.total")
    assert ok.result(lambda: (None, "no GPU to compare")).unknown == "no GPU to compare"


def test_collected_tells_a_fact_never_asked_for_from_one_that_failed():
    facts = Facts({"driver.version": known("580.159.04", "nvml")}, missing={"gpus": "timed out"})
    assert collected(facts, "driver.version", "gpus[0].name")  # asked for; its probe failed
    assert not collected(facts, "driver.version", "python.version")  # its probe was not run
