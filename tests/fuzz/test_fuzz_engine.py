"""The engine over any Facts: condition trees the loader accepts evaluate to True, False or unknown (None),
templates render to text, fix arguments are plain tokens or refused, NVIDIA_REQUIRE_* expressions parse or
raise RequireSyntaxError; whatever the facts hold (wrong types, unknowns, facts nobody collected)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpudoctor.container import require as nvidia_require
from gpudoctor.engine.conditions import Evaluation, validate
from gpudoctor.engine.evaluate import evaluate_rule
from gpudoctor.engine.model import Rule
from gpudoctor.engine.template import FILTERS, PLACEHOLDER, SAFE_ARG, UnsafeArgument, render, render_arg
from gpudoctor.facts import LISTS, SCHEMA, Fact, Facts

from .strategies import any_value, conditions, facts_trees, referenced, text

for_each = st.one_of(st.none(), st.sampled_from(LISTS))


@st.composite
def condition_and_facts(draw):
    loop = draw(for_each)
    cond = draw(conditions(loop))
    facts = draw(facts_trees(sorted(referenced(cond))))
    return loop, cond, facts


@given(condition_and_facts())
def test_generated_conditions_are_valid_and_evaluate_three_valued(case):
    loop, cond, facts = case
    errors: list = []
    validate(cond, "when", loop, errors)
    assert errors == []
    items = [None] if loop is None else list(range(facts.count(loop))) or [0]
    for item in items:
        ev = Evaluation(facts, item)
        result = ev(cond)
        assert result in (True, False, None)
        assert all(isinstance(reason, str) for reason in ev.unknown.values())


@given(condition_and_facts(), st.sampled_from(["error", "warning", "info"]))
def test_rules_over_any_facts_give_a_result(case, severity):
    loop, cond, facts = case
    rule = Rule(
        id="FUZZ-1",
        title="t",
        severity=severity,
        category="gpu",
        when=cond,
        message="m",
        why="w",
        for_each=loop,
    )
    result = evaluate_rule(rule, facts)
    assert result.status in ("fired", "passed", "unknown", "not_applicable")
    assert (result.status == "fired") == bool(result.findings)


@given(condition_and_facts())
def test_not_inverts_known_results(case):
    loop, cond, facts = case
    item = None if loop is None else 0
    inner = Evaluation(facts, item)(cond)
    outer = Evaluation(facts, item)({"not": cond})
    assert outer == (None if inner is None else not inner)


def _unknown_names():
    return st.one_of(
        st.sampled_from(["no.such.fact", "gpus[99].name", "gpus[0].nope", "frameworks[-1].name", "x"]),
        st.from_regex(r"\A[a-z_][a-z0-9_.\[\]]{0,30}\Z"),
    )


placeholder = st.builds(
    lambda name, flt: "{" + name + (f"|{flt}" if flt else "") + "}",
    st.one_of(st.sampled_from([s.name.replace("[]", "[i]") for s in SCHEMA]), _unknown_names()),
    st.one_of(st.none(), st.sampled_from(sorted(FILTERS))),
)
template_text = st.lists(
    st.one_of(text, placeholder, st.sampled_from(["{", "}", "{{", "|size}"])), max_size=6
).map("".join)


@st.composite
def facts_with_values(draw):
    names = draw(st.lists(st.sampled_from([s.name for s in SCHEMA]), max_size=20, unique=True))
    facts = draw(facts_trees(names))
    extra = draw(st.dictionaries(_unknown_names(), any_value.map(lambda v: Fact(v, "fuzz")), max_size=3))
    return Facts({**dict(facts.items()), **extra}, facts.missing)


@given(template_text, facts_with_values(), st.one_of(st.none(), st.integers(0, 4)))
def test_templates_render_over_any_facts(template, facts, item):
    out = render(template, facts, item)
    assert isinstance(out, str)
    try:
        arg = render_arg(template, facts, item)
    except UnsafeArgument as e:
        assert str(e)
        return
    assert isinstance(arg, str)


@given(placeholder, facts_with_values(), st.one_of(st.none(), st.integers(0, 4)))
def test_a_fact_placed_in_a_command_is_a_plain_token_or_refused(ph, facts, item):
    try:
        arg = render_arg(ph, facts, item)
    except UnsafeArgument:
        return
    if PLACEHOLDER.fullmatch(ph):
        assert SAFE_ARG.match(arg), arg  # never empty, never an option, no blanks, quotes or shell syntax
    else:
        assert arg == ph  # not a placeholder ("{frameworks[-1].name}"): the rule's own literal text


# --- NVIDIA_REQUIRE_* --------------------------------------------------------------------------------------

constraint = st.tuples(
    st.sampled_from(["cuda", "driver", "arch", "brand"]),
    st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
    st.one_of(
        st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,3}){0,2}\Z"), st.sampled_from(["tesla", "nvidia", "grid"])
    ),
)
groups = st.lists(st.lists(constraint, min_size=1, max_size=3), max_size=4)


@given(groups)
def test_well_formed_constraints_split_back(gs):
    for g in gs:
        for n, op, v in g:
            assert nvidia_require.split_constraint(f"{n}{op}{v}") == (n, op, v)


requirement_text = st.one_of(
    text,
    groups.map(lambda gs: " ".join(",".join(f"{n}{op}{v}" for n, op, v in g) for g in gs)),
    st.lists(
        st.sampled_from(["cuda>=12.4", "brand=tesla", ",", " ", "driver<", "1" * 5000, "arch=²", "==", "\t"])
    ).map("".join),
)
KNOWN_DRIVER = nvidia_require.Driver("550.163.01", "12.4")
KNOWN_GPUS = [nvidia_require.Gpu("tesla", "7.0"), nvidia_require.Gpu("nvidia", "9.0")]


@given(requirement_text)
def test_any_requirement_text_gets_a_verdict_on_a_known_host(expr):
    verdict = nvidia_require.judge([expr], KNOWN_GPUS, KNOWN_DRIVER)
    assert verdict.status in (nvidia_require.MET, nvidia_require.UNMET, nvidia_require.INVALID)
    assert (verdict.error is None) == (verdict.status == nvidia_require.MET)


@given(requirement_text, st.sampled_from(["version", "cuda", "brand", "arch"]))
def test_an_unknown_fact_never_changes_the_verdict_only_withholds_it(expr, hidden):
    # Following an unknown fact both ways is sound: the verdict is unknown, or the known host's.
    driver = nvidia_require.Driver(
        None if hidden == "version" else KNOWN_DRIVER.version, None if hidden == "cuda" else KNOWN_DRIVER.cuda
    )
    gpus = [
        nvidia_require.Gpu(None if hidden == "brand" else g.brand, None if hidden == "arch" else g.arch)
        for g in KNOWN_GPUS
    ]
    admitted = nvidia_require.judge([expr], KNOWN_GPUS, KNOWN_DRIVER).status == nvidia_require.MET
    partial = nvidia_require.judge([expr], gpus, driver)
    assert partial.status is None or (partial.status == nvidia_require.MET) == admitted


@given(requirement_text, st.data())
def test_requirements_are_judged_over_any_facts(expr, data):
    names = ["driver.max_cuda", "driver.version", "gpus[].compute_capability", "gpus[].brand"]
    facts = data.draw(facts_trees(names))
    met, missing = nvidia_require.satisfied(expr, facts)
    assert met in (True, False, None)
    assert (met is None) == bool(missing)
