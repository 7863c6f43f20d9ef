"""gpudoctor/fact_table.py, generated from the fact and probe declarations beside the code that produces them.

    python tools/gen_facts.py            rewrite gpudoctor/fact_table.py (then `gpudoctor rules docs docs`)
    python tools/gen_facts.py --check    exit 1 when it is stale or a declaration is wrong

A module that produces facts declares them in a top-level `FACT_SPECS = (FactSpec(name, type, unit, doc),
...)`: every probe module, and the derive and bench modules for the facts they add. A probe module also
declares `PROBE = ProbeSpec(name, profiles=..., per_env=..., options=..., deep=...)` (gpudoctor/probes/
__init__.py). This tool reads them from the source with `ast`, without importing anything, so that it runs
even when the table it writes is stale; declarations are therefore literals (profiles may name the
constants of gpudoctor/probes/__init__.py). The table holds:

    FACTS   (name, type, unit, doc) of every fact, grouped by section (a name's head: `gpus` for
            `gpus[].name`) in GROUPS order, each section in its module's order: facts.SCHEMA and the order
            of docs/facts.md
    PROBES  (name, profiles, per_env, options, deep, module, heads, derives) of every probe, in
            PROBE_ORDER: the registry, the profiles' probe lists, ENV_PROBES and the derivations beside
            the probes (derives: the module has a top-level `def derive(facts)`); a probe owns the sections
            its facts are in

Each section is declared by one module only. A new section or probe goes after the pinned ones.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpudoctor"
TABLE = PACKAGE / "fact_table.py"

# The sections in the order docs/facts.md has always listed them; a section not here follows them.
GROUPS = (
    "host", "driver", "pci", "gpus", "cuda", "cudnn", "nccl", "python", "frameworks", "extensions",
    "cuda_libs", "system", "env", "interconnect", "container", "knowledge", "monitoring", "storage",
    "runtime", "kernel_log", "xid", "sxid", "gpu_processes", "gpu_mig", "gpu_health", "fabric",
    "fabric_manager", "imex", "bench", "dcgm",
)  # fmt: skip
# The probes in the order they start and are reported; a probe not here follows them.
PROBE_ORDER = (
    "driver", "gpus", "cuda", "libraries", "python", "system", "container", "monitoring", "storage",
    "kernel_log", "interconnect", "gpu_processes", "gpu_health", "fabric", "runtime",
)  # fmt: skip
PROBE_FIELDS = ("name", "profiles", "per_env", "options", "deep")
FACT_FIELDS = ("name", "type", "unit", "doc")
FULL_PROFILES = ("workstation", "ci")  # ProbeSpec's default profiles (gpudoctor/probes/__init__.py)
TYPES = ("str", "int", "float", "bool", "version", "list[str]", "list[int]")


class DeclarationError(Exception):
    pass


def head(name: str) -> str:
    return re.split(r"[.\[]", name, maxsplit=1)[0]


def _assigned(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


def _call(node: ast.expr, func: str, fields: tuple[str, ...], names: dict[str, Any], where: str) -> dict:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == func):
        raise DeclarationError(f"{where}: expected {func}(...)")
    if len(node.args) > len(fields):
        raise DeclarationError(f"{where}: {func} takes at most {len(fields)} positional arguments")
    pairs = list(zip(fields, node.args)) + [(k.arg, k.value) for k in node.keywords]
    out = {}
    for key, value in pairs:
        if key not in fields:
            raise DeclarationError(f"{where}: {func} has no field {key!r}")
        if isinstance(value, ast.Name) and value.id in names:
            out[key] = names[value.id]
            continue
        try:
            out[key] = ast.literal_eval(value)
        except ValueError:
            raise DeclarationError(f"{where}: {func}'s {key} must be a literal") from None
    return out


def declarations(package: Path = PACKAGE) -> tuple[list[dict], list[dict]]:
    """(facts, probes) as declared, in module order (package-relative path) and declaration order."""
    init = package / "probes" / "__init__.py"
    names: dict[str, Any] = {}
    if init.is_file():
        for name, value in _assigned(ast.parse(init.read_text(encoding="utf-8"))).items():
            if name.isupper():
                try:
                    names[name] = ast.literal_eval(value)
                except ValueError:
                    pass
    facts: list[dict] = []
    probes: list[dict] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if "FACT_SPECS" not in path.read_text(encoding="utf-8"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        found = _assigned(tree)
        if "FACT_SPECS" not in found:
            continue
        specs = found["FACT_SPECS"]
        if not isinstance(specs, ast.Tuple):
            raise DeclarationError(f"{rel}: FACT_SPECS must be a tuple of FactSpec(...)")
        mine = []
        for node in specs.elts:
            spec = _call(node, "FactSpec", FACT_FIELDS, {}, rel)
            if set(spec) != set(FACT_FIELDS):
                raise DeclarationError(f"{rel}: FactSpec needs {', '.join(FACT_FIELDS)}")
            if spec["type"] not in TYPES:
                raise DeclarationError(f"{rel}: {spec['name']}: type {spec['type']!r} is none of {TYPES}")
            mine.append({**spec, "module": rel})
        facts += mine
        if "PROBE" in found:
            if not rel.startswith("probes/"):
                raise DeclarationError(f"{rel}: a PROBE is declared in gpudoctor/probes/ only")
            probe = _call(found["PROBE"], "ProbeSpec", PROBE_FIELDS, names, rel)
            heads = list(dict.fromkeys(head(f["name"]) for f in mine))
            derives = any(isinstance(n, ast.FunctionDef) and n.name == "derive" for n in tree.body)
            module = rel[len("probes/") : -len(".py")]
            probes.append({**probe, "module": module, "heads": heads, "derives": derives})
    return facts, probes


def _ordered(items: Iterable[str], pinned: tuple[str, ...]) -> list[str]:
    items = list(dict.fromkeys(items))
    return [i for i in pinned if i in items] + [i for i in items if i not in pinned]


def table(facts: list[dict], probes: list[dict]) -> tuple[list[tuple], list[tuple]]:
    """The FACTS and PROBES rows; DeclarationError where two modules declare one fact or one section."""
    owner: dict[str, str] = {}
    seen: set[str] = set()
    for f in facts:
        if f["name"] in seen:
            raise DeclarationError(f"{f['module']}: {f['name']} is declared twice")
        seen.add(f["name"])
        if owner.setdefault(head(f["name"]), f["module"]) != f["module"]:
            raise DeclarationError(
                f"{f['module']}: section {head(f['name'])!r} is declared in {owner[head(f['name'])]} already"
            )
    by_name = {p["name"]: p for p in probes}
    if len(by_name) != len(probes):
        raise DeclarationError("two probes share a name: " + ", ".join(p["name"] for p in probes))
    rows = [
        (f["name"], f["type"], f["unit"], f["doc"])
        for group in _ordered((head(f["name"]) for f in facts), GROUPS)
        for f in facts
        if head(f["name"]) == group
    ]
    probe_rows = []
    for name in _ordered((p["name"] for p in probes), PROBE_ORDER):
        p = by_name[name]
        probe_rows.append(
            (
                name,
                tuple(p.get("profiles", FULL_PROFILES)),
                bool(p.get("per_env", False)),
                tuple(p.get("options", ())),
                bool(p.get("deep", False)),
                p["module"],
                tuple(p["heads"]),
                p["derives"],
            )
        )
    return rows, probe_rows


def render(rows: list[tuple], probe_rows: list[tuple]) -> str:
    out = [
        '"""Every fact and probe gpudoctor declares. Generated by tools/gen_facts.py from the',
        "FACT_SPECS and PROBE declarations beside the code that produces them (gpudoctor/probes/*.py,",
        "derive.py, bench/); do not edit by hand: edit the declaration, then run",
        '`python tools/gen_facts.py` and `gpudoctor rules docs docs`."""',
        "",
        "# (name, type, unit, doc), grouped by section in the order of docs/facts.md",
        "FACTS = (",
        *(f"    {row!r}," for row in rows),
        ")",
        "",
        "# (name, profiles, per_env, options, deep, module, heads, derives), in the order the probes start",
        "PROBES = (",
        *(f"    {row!r}," for row in probe_rows),
        ")",
    ]
    return "\n".join(out) + "\n"


def generate(package: Path = PACKAGE) -> str:
    return render(*table(*declarations(package)))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when gpudoctor/fact_table.py is stale")
    args = ap.parse_args(argv)
    try:
        text = generate()
    except DeclarationError as e:
        print(f"gen_facts: {e}", file=sys.stderr)
        return 1
    current = TABLE.read_text(encoding="utf-8") if TABLE.is_file() else ""
    if args.check:
        if current != text:
            print("gpudoctor/fact_table.py is stale: run python tools/gen_facts.py", file=sys.stderr)
            return 1
        return 0
    if current != text:
        TABLE.write_text(text, encoding="utf-8")
        print(f"wrote {TABLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
