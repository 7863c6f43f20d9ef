"""Which cause `explain` names first: the specific before the generic by construction (a rule's `refines:`,
a catch-all's `catch_all: true`, the rarity of the words matched, never the length of the text), and the
host's evidence before the text (applies, then could not be checked, then does not apply)."""

from __future__ import annotations

from gpudoctor.explain.match import Known, Matcher
from gpudoctor.explain.rank import by_evidence

from conftest import H200, run_cli

# The message of https://github.com/pytorch/pytorch/issues/116517 (libcudart of the wrong CUDA major).
MESSAGE = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory"
GENERIC = "cannot open shared object file: No such file or directory"


def ids(ranked):
    return [c.known.id for c in ranked]


def filler():
    # Rarity is relative: a set of texts as large as the shipped one, many sharing the common words.
    return [Known(f"GD-F{n}", "f", (f"filler{n} cannot open file error",)) for n in range(40)]


def test_a_specific_text_beats_a_longer_generic_one_by_the_rarity_of_its_words():
    m = Matcher([Known("GD-GENERIC", "g", (GENERIC,)), Known("GD-CUDART", "s", ("libcudart.so",)), *filler()])
    ranked = m.rank(MESSAGE)
    assert ids(ranked)[:2] == ["GD-CUDART", "GD-GENERIC"]
    assert ranked[0].how == ranked[1].how == "text" and ranked[0].score == ranked[1].score  # a tie of words


def test_a_rule_that_refines_another_comes_first_whatever_its_words():
    # Without refines, the generic text's words are the rarer here (many texts say ImportError) and it
    # leads; with refines, the rule that says it is the specific case leads.
    common = [Known(f"GD-F{n}", "f", (f"ImportError filler{n}",)) for n in range(40)]
    plain = Matcher([Known("GD-GENERIC", "g", (GENERIC,)), Known("GD-A", "s", ("ImportError",)), *common])
    assert ids(plain.rank(MESSAGE))[0] == "GD-GENERIC"
    refined = Matcher(
        [Known("GD-GENERIC", "g", (GENERIC,)), Known("GD-A", "s", ("ImportError",), ("GD-GENERIC",)), *common]
    )
    assert ids(refined.rank(MESSAGE))[:2] == ["GD-A", "GD-GENERIC"]


def test_a_catch_all_ranks_after_every_other_confident_cause():
    m = Matcher(
        [
            Known("GD-AAA", "catch-all", (MESSAGE,), catch_all=True),
            Known("GD-ZZZ", "specific", ("libcudart.so.11.0",)),
            *filler(),
        ]
    )
    assert ids(m.rank(MESSAGE))[:2] == ["GD-ZZZ", "GD-AAA"]


def test_refines_and_catch_all_do_not_lift_a_weak_match_above_a_confident_one():
    m = Matcher(
        [
            Known("GD-GENERIC", "g", (GENERIC,), catch_all=True),
            Known("GD-WEAK", "w", ("libcudart nvrtc cublas cufft curand cusparse",), ("GD-GENERIC",)),
        ]
    )
    ranked = m.rank(MESSAGE)
    assert ids(ranked)[0] == "GD-GENERIC" and ranked[0].confident
    assert all(not c.confident for c in ranked[1:])


def test_the_evidence_orders_applies_then_unknown_then_does_not_apply_keeping_the_text_order():
    m = Matcher([Known(f"GD-{n}", "t", (GENERIC,)) for n in "ABCDE"])
    ranked = m.rank(MESSAGE)
    status = {
        "GD-A": "does not apply",
        "GD-B": "could not be checked",
        "GD-C": "applies",
        "GD-D": "does not apply",
        "GD-E": "not checked",
    }
    ordered = by_evidence(ranked, lambda c: c, lambda c: status[c.known.id])
    assert ids(ordered) == ["GD-C", "GD-B", "GD-E", "GD-A", "GD-D"]


# Two user rules sharing one error text, on the real H200 capture: the one named first by the text
# (AAA-...) does not apply there; the later ones apply or could not be checked.
RULES = """\
rules:
  - id: AAA-TEST-001
    title: Cause that does not apply on the H200
    severity: error
    category: gpu
    when: {fact: gpus.count, eq: 0}
    message: "no GPU"
    why: test
    errors: ["the shared test error text of this test"]
  - id: BBB-TEST-001
    title: Cause that could not be checked on the H200 without --deep
    severity: error
    category: driver
    when: {fact: runtime.cuda.status, eq: failed}
    message: "CUDA failed"
    why: test
    errors: ["the shared test error text of this test"]
  - id: CCC-TEST-001
    title: Cause that applies on the H200
    severity: error
    category: gpu
    when: {fact: gpus.count, gt: 0}
    message: "a GPU here"
    why: test
    errors: ["the shared test error text of this test"]
"""


def test_explain_on_a_host_names_the_cause_that_applies_first(tmp_path):
    pack = tmp_path / "shared.yaml"
    pack.write_text(RULES)
    r = run_cli(
        "explain", "--snapshot", str(H200), "--rules", str(pack), "E: the shared test error text of this test"
    )
    assert r.returncode == 0, r.stderr
    heads = [line for line in r.stdout.splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert heads == [
        "1. CCC-TEST-001 · Cause that applies on the H200",
        "2. BBB-TEST-001 · Cause that could not be checked on the H200 without --deep",
        "3. AAA-TEST-001 · Cause that does not apply on the H200",
    ]


def test_a_log_line_is_grouped_under_the_cause_that_applies_here(tmp_path):
    pack = tmp_path / "shared.yaml"
    pack.write_text(RULES)
    log = tmp_path / "job.log"
    log.write_text("step 1\nE: the shared test error text of this test\nstep 2\n")
    r = run_cli("explain", "--snapshot", str(H200), "--rules", str(pack), "--log", str(log))
    assert r.returncode == 0, r.stderr
    assert "CCC-TEST-001 · Cause that applies on the H200" in r.stdout
    assert "AAA-TEST-001" not in r.stdout and "BBB-TEST-001" not in r.stdout


def test_on_the_very_same_text_the_generic_cause_comes_first_and_a_weaker_specific_one_does_not_demote_it():
    # "CUDA_ERROR_NO_DEVICE" alone says no more than the symptom both rules list: the symptom's rule, which
    # names its specific causes, leads (the host's evidence then orders them); a rule that refines it but
    # matched only on a few shared words does not push it down.
    m = Matcher(
        [
            Known("GD-MIG", "specific", ("CUDA_ERROR_NO_DEVICE",), ("GD-SYMPTOM",)),
            Known("GD-SYMPTOM", "symptom", ("CUDA_ERROR_NO_DEVICE",), catch_all=True),
            Known("GD-WEAK", "weak", ("failed call to cuInit with no device found",), ("GD-SYMPTOM",)),
            *filler(),
        ]
    )
    ranked = m.rank("failed call to cuInit: CUDA_ERROR_NO_DEVICE")
    assert ids(ranked)[:2] == ["GD-SYMPTOM", "GD-MIG"]


def test_a_specific_cause_matched_on_a_text_the_generic_one_lists_does_not_demote_it():
    # jax-ml/jax#21998's message: "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error" is listed by
    # the generic cause (nvidia_uvm lost its state) and by the refinement after a suspend: the text names no
    # sleep, so the generic leads on the text (best match on rarer words) and the host tells them apart.
    symptom = "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error"
    m = Matcher(
        [
            Known("GD-UVM", "uvm", ("CUDA_ERROR_UNKNOWN", symptom)),
            Known("GD-SLEEP", "after a sleep", (symptom,), ("GD-UVM",)),
            *filler(),
        ]
    )
    ranked = m.rank("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:266] " + symptom)
    assert ids(ranked)[:2] == ["GD-UVM", "GD-SLEEP"]
