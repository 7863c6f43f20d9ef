"""report/text.py: the text report names what it could not evaluate, and why."""

from __future__ import annotations

from gpudoctor.pipeline.verdict import decide
from gpudoctor.report.text import render_plain

from .reportkit import result_of, rules_of

RULE = (
    "  - id: T-U-{n}\n    title: t\n    severity: {sev}\n    category: gpu\n"
    "    when: {{fact: '{fact}', {test}}}\n    message: m\n    why: w\n"
)


def test_the_rules_that_could_not_be_evaluated_are_named_with_their_reasons():
    rules = rules_of(
        "rules:\n"
        + RULE.format(n="001", sev="error", fact="xid.count", test="gt: 0")
        + RULE.format(n="002", sev="warning", fact="xid.count", test="gt: 0")
        + RULE.format(n="003", sev="warning", fact="system.shm.exists", test="eq: false")
    )
    # Reasons as a replayed snapshot and an unreadable kernel log give them (golden h200-check.md).
    result = result_of(
        {
            "xid.count": {"unknown": "the kernel log could not be read: not recorded in snapshot"},
            "system.shm.exists": {"unknown": "not recorded in snapshot"},
        },
        rules,
    )
    lines = render_plain(result, decide(result, "error")).splitlines()
    start = lines.index("Could not be evaluated")
    assert lines[start : start + 4] == [
        "Could not be evaluated",
        "  the kernel log could not be read: not recorded in snapshot: T-U-001, T-U-002",
        "  not recorded in snapshot: T-U-003",
        "",
    ]
    assert lines[start + 4].startswith("Result      0 error(s), 0 warning(s), 0 info; 0 rule(s) passed")
    assert "3 could not be evaluated (facts unknown)" in lines[start + 4]


def test_nothing_unknown_no_section():
    result = result_of(
        {"gpus.count": 0},
        rules_of("rules:\n" + RULE.format(n="001", sev="error", fact="gpus.count", test="gt: 0")),
    )
    assert "Could not be evaluated" not in render_plain(result, decide(result, "error"))
