"""tools/gen_facts.py: gpudoctor/fact_table.py is generated from the FACT_SPECS and PROBE declarations beside
the code that produces the facts, and matches them; a declaration that would make the schema ambiguous is
refused."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from gpudoctor.facts import SCHEMA
from gpudoctor.probes import DECLARED, ENV_PROBES, registry

TOOL = Path(__file__).resolve().parents[2] / "tools" / "gen_facts.py"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_facts", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_facts"] = module
    spec.loader.exec_module(module)
    return module


def test_the_fact_table_is_fresh(gen):
    assert gen.TABLE.read_text(encoding="utf-8") == gen.generate(), "stale: run python tools/gen_facts.py"


def test_the_schema_is_grouped_by_section_in_the_documented_order(gen):
    heads = list(dict.fromkeys(gen.head(s.name) for s in SCHEMA))
    assert heads[: len(gen.GROUPS)] == list(gen.GROUPS)
    assert len(heads) == len({gen.head(s.name) for s in SCHEMA})  # each section in one run


def test_each_probe_owns_the_sections_of_its_facts_and_nothing_else():
    owned = [h for p in DECLARED for h in p.heads]
    assert len(owned) == len(set(owned))
    # The sections no probe produces: collect.py's host.kind sits with the system probe's host.hostname;
    # knowledge.* is derived, bench[] and dcgm[] come from `gpudoctor bench`, drift[] and peers[] from
    # `gpudoctor fleet`, policy.* from a policy file (gpudoctor/policy.py), image.* and lock.* from `check
    # --image` and `check --lock` (gpudoctor/subject.py).
    assert {s.name.split(".")[0].split("[")[0] for s in SCHEMA} - set(owned) == {
        "knowledge",
        "bench",
        "dcgm",
        "drift",
        "peers",
        "policy",
        "image",
        "lock",
    }
    assert [(name, heads) for name, heads, _fn in registry(deep=True)] == [
        (p.name, p.heads) for p in DECLARED
    ]


def test_env_probes_are_those_declared_per_environment():
    assert set(ENV_PROBES) == {"python", "libraries", "system", "runtime"}


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "gpudoctor"
    for rel, text in {
        "probes/__init__.py": 'EVERY_PROFILE = ("workstation", "ci", "preflight")\n',
        **files,
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_a_new_probe_is_read_from_its_module_alone(gen, tmp_path):
    pkg = _package(
        tmp_path,
        {
            "probes/driver.py": 'FACT_SPECS = (FactSpec("driver.loaded", "bool", "", "loaded"),)\n'
            'PROBE = ProbeSpec("driver", profiles=EVERY_PROFILE)\n',
            "probes/zeta.py": 'FACT_SPECS = (FactSpec("zeta.count", "int", "", "zetas"),)\n'
            'PROBE = ProbeSpec("zeta", options=("since",))\n'
            "def derive(facts):\n    return {}\n",
        },
    )
    facts, probes = gen.table(*gen.declarations(pkg))
    assert facts == [("driver.loaded", "bool", "", "loaded"), ("zeta.count", "int", "", "zetas")]
    assert probes == [
        ("driver", ("workstation", "ci", "preflight"), False, (), False, "driver", ("driver",), False),
        ("zeta", ("workstation", "ci"), False, ("since",), False, "zeta", ("zeta",), True),
    ]


@pytest.mark.parametrize(
    ("files", "error"),
    [
        (
            {
                "probes/a.py": 'FACT_SPECS = (FactSpec("gpus.count", "int", "", "x"),)\n'
                'PROBE = ProbeSpec("a")\n',
                "derive.py": 'FACT_SPECS = (FactSpec("gpus[].extra", "int", "", "x"),)\n',
            },
            "section 'gpus' is declared in derive.py already",
        ),
        ({"probes/a.py": 'FACT_SPECS = (FactSpec("a.x", "integer", "", "x"),)\n'}, "type 'integer'"),
        ({"probes/a.py": 'FACT_SPECS = (FactSpec("a.x", "int", "", DOC),)\n'}, "doc must be a literal"),
        ({"derive.py": 'FACT_SPECS = ()\nPROBE = ProbeSpec("d")\n'}, "gpudoctor/probes/ only"),
    ],
)
def test_a_wrong_declaration_is_refused(gen, tmp_path, files, error):
    with pytest.raises(gen.DeclarationError, match=error):
        gen.table(*gen.declarations(_package(tmp_path, files)))
