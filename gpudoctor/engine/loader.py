"""Loads rule files and validates them strictly: every problem at once, each with file, line and rule id.

A rule file is YAML: `rules:` followed by a list of rules (see docs/writing-rules.md). Shipped rules load
from the package; user files and directories (--rules) load beside them. A duplicate id is an error unless
the later rule says `overrides: true`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional, Protocol

from ..datafiles import Problem, read_capped, read_capped_text, rule_files, shipped_rules_dir
from ..facts import LISTS
from . import conditions, rule_cache, template, yamlsafe
from .model import CATEGORIES, FIX_KINDS, SEVERITIES, ErrorText, FixStep, Rule
from .resolver_names import RESOLVER_ARGS

ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)+$")
REQUIRED = ("id", "title", "severity", "category", "when", "message", "why")
OPTIONAL = (
    "applies",
    "for_each",
    "references",
    "errors",
    "silent",
    "refines",
    "catch_all",
    "fix",
    "overrides",
)
ERROR_KEYS = ("text", "source")
FIX_KEYS = ("kind", "argv", "text", "resolver", "args")


class RuleLoadError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


class Deadline(Protocol):
    """The check's deadline (host/base.py's Deadline): how many seconds are left."""

    def remaining(self) -> float: ...


def load_rules(
    paths: list[str], include_shipped: bool = True, deadline: Optional[Deadline] = None
) -> list[Rule]:
    """All rules from the shipped set and the given files, directories and pinned URLs (remote packs);
    RuleLoadError lists every problem. A remote pack's download ends by the check's `deadline` too (its
    --timeout), not only by remote.DEADLINE. A rule that replaces a shipped one says which (Rule.replaces).
    The shipped set comes whole from its cache while no shipped file changed (engine/rule_cache.py)."""
    if not include_shipped:
        return _load(paths, [], deadline)
    names, loaded = rule_cache.load_shipped(str(shipped_rules_dir()), lambda f: load_file(f, cached=True))
    return _load(paths, [Path(n) for n in names], deadline, loaded)


def validate_rules(paths: list[str]) -> list[Rule]:
    """What `gpudoctor rules validate` accepts: the rules of these files, directories and URLs exactly as
    `check --rules` would load them beside the shipped set, so an id that clashes with a shipped rule is a
    problem unless the rule says `overrides: true`. Shipped files among `paths` (validating rules/ itself,
    or a byte-identical copy of a shipped file: the source tree's rules/ beside a non-editable install) are
    not loaded twice. The rules of `paths` only; RuleLoadError lists every problem."""
    from . import remote

    given = {
        f.resolve() for p in paths if not remote.is_url(p) and Path(p).exists() for f in rule_files(Path(p))
    }
    contents = {_contents(f) for f in given if f.is_file()}  # a pipe read here would be read empty later
    base = [
        f
        for f in rule_files(shipped_rules_dir())
        if f.resolve() not in given and _contents(f) not in contents
    ]
    shipped = {str(f) for f in base}
    # A directory with no rule file in it validates nothing: a mistyped path must not read as valid.
    problems = [
        Problem(p, 0, "", "", "no rule files (*.yaml, *.yml) in this directory")
        for p in paths
        if not remote.is_url(p) and Path(p).is_dir() and not rule_files(Path(p))
    ]
    try:
        rules = [r for r in _load(paths, base) if r.file not in shipped]
    except RuleLoadError as e:
        raise RuleLoadError(problems + e.problems) from None
    problems += unspoken_problems(rules)
    if problems:
        raise RuleLoadError(problems)
    return rules


def _contents(path: Path) -> Optional[bytes]:
    try:
        return read_capped(path, yamlsafe.MAX_BYTES)
    except OSError:
        return None  # load_file says what is wrong with it


def unspoken_problems(rules: list[Rule]) -> list[Problem]:
    """What `rules validate` refuses beyond the loader: a rule that lists no error message users meet when
    it bites and does not say why no program prints one. `explain` can lead to a rule only through its
    errors, so a rule without them must say it has none."""
    return [
        Problem(
            r.file,
            r.line,
            r.id,
            "errors",
            "no errors: list the error messages users meet when this rule bites (errors:, each with its "
            "source), or say why no program prints one (silent: ...)",
        )
        for r in rules
        if not r.errors and not r.silent
    ]


def _load(
    paths: list[str], base: list[Path], deadline: Optional[Deadline] = None, loaded: Optional[list] = None
) -> list[Rule]:
    """The rules of `base` (the shipped files; `loaded`: their rules and problems, when already read) and
    of `paths`, merged."""
    if loaded is None:
        shipped = shipped_rules_dir().resolve()
        loaded = [load_file(f, cached=f.resolve().parent == shipped) for f in base]
    else:
        loaded = list(loaded)
    for p in paths:
        from . import remote  # imported only when rule paths are given (a check seldom names any)

        if remote.is_url(p):
            loaded.append(load_url(p, deadline))
            continue
        path = Path(p)
        if not path.exists():
            loaded.append(([], [Problem(p, 0, "", "", "no such file or directory")]))
            continue
        loaded += [load_file(f) for f in rule_files(path)]
    rules = [r for file_rules, _ in loaded for r in file_rules]
    problems = [p for _, file_problems in loaded for p in file_problems]
    rules, dup_problems = _merge(rules, {str(f) for f in base})
    problems += dup_problems + _refines_problems(rules)
    if problems:
        raise RuleLoadError(problems)
    return rules


def _refines_problems(rules: list[Rule]) -> list[Problem]:
    """A rule refines rules that are loaded beside it, other than itself."""
    ids = {r.id for r in rules}
    return [
        Problem(
            r.file,
            r.line,
            r.id,
            "refines",
            f"{other} is not a rule loaded here" if other != r.id else "a rule does not refine itself",
        )
        for r in rules
        for other in r.refines
        if other not in ids or other == r.id
    ]


def load_file(path: Path, cached: bool = False) -> tuple[list[Rule], list[Problem]]:
    """One rule file's rules and problems; `cached`: a shipped file, whose rules may come from the cache
    (engine/rule_cache.py)."""
    name = str(path)
    try:
        text = read_capped_text(path, yamlsafe.MAX_BYTES)
    except OSError as e:
        return [], [Problem(name, 0, "", "", f"cannot read: {e.strerror or e}")]
    except UnicodeDecodeError as e:
        return [], [Problem(name, 0, "", "", f"cannot read: {e}")]
    if cached:
        return rule_cache.load(text, name, parse_rules)
    return parse_rules(text, name)


def load_url(url: str, deadline: Optional[Deadline] = None) -> tuple[list[Rule], list[Problem]]:
    """A remote rule pack (see engine/remote.py); a fetch or verification failure is a Problem. With the
    check's deadline, the download gets what is left of it, if that is less than remote.DEADLINE."""
    from . import remote

    try:
        if deadline is None:
            text, name = remote.fetch(url)
        else:
            left = deadline.remaining()
            if left <= 0:
                raise remote.RemoteError("not fetched: the check's deadline (--timeout) has passed")
            text, name = remote.fetch(
                url,
                timeout=(min(remote.TIMEOUT[0], left), min(remote.TIMEOUT[1], left)),
                deadline=min(remote.DEADLINE, left),
                why=" (the check's --timeout)" if left < remote.DEADLINE else "",
            )
    except remote.RemoteError as e:
        return [], [Problem(remote.display_name(url), 0, "", "", str(e))]
    return parse_rules(text, name)


def parse_rules(text: str, name: str) -> tuple[list[Rule], list[Problem]]:
    try:
        data, lines = yamlsafe.load(text)
    except yamlsafe.YamlError as e:
        return [], [Problem(name, e.line, "", "", e.message)]
    if not isinstance(data, dict) or "rules" not in data:
        return [], [Problem(name, 1, "", "", "a rule file is a mapping with a 'rules' list")]
    problems = [
        Problem(name, lines.get((k,), 1), "", k, "unknown top-level key (expected only 'rules')")
        for k in data
        if k != "rules"
    ]
    if not isinstance(data["rules"], list):
        return [], problems + [
            Problem(name, lines.get(("rules",), 1), "", "rules", "expected a list of rules")
        ]
    rules = []
    for i, raw in enumerate(data["rules"]):
        rule, rule_problems = _rule(raw, ("rules", i), lines, name)
        problems += rule_problems
        if rule is not None and not rule_problems:
            rules.append(rule)
    return rules, problems


def _line(lines: dict, path: tuple, where: str = "") -> int:
    """The line of the deepest node named by a dotted/indexed `where` below `path`."""
    full = list(path)
    for piece in re.findall(r"[^.\[\]]+|\[[0-9]{1,9}\]", where):  # int() refuses "²" and 4,300+ digits
        full.append(int(piece[1:-1]) if piece.startswith("[") else piece)
        if tuple(full) not in lines:
            full.pop()
            break
    return lines.get(tuple(full), lines.get(path, 0))


def key_problems(raw: dict, required: tuple, optional: tuple = ()) -> list[tuple[str, str]]:
    """(key, problem) for each required key missing from a mapping and each key it has that is neither
    required nor optional: a rule's, and an explain entry's (explain/entries.py)."""
    found = [("", f"missing required key '{key}'") for key in required if key not in raw]
    found += [
        (str(key), f"unknown key (expected: {', '.join(required + optional)})")
        for key in raw
        if key not in required and key not in optional
    ]
    return found


def _rule(raw: Any, path: tuple, lines: dict, name: str) -> tuple[Optional[Rule], list[Problem]]:
    line = lines.get(path, 0)
    if not isinstance(raw, dict):
        return None, [Problem(name, line, "", f"rules[{path[1]}]", "a rule must be a mapping")]
    rid = raw.get("id") if isinstance(raw.get("id"), str) else ""
    found = key_problems(raw, REQUIRED, OPTIONAL)
    if "id" in raw and (not isinstance(raw["id"], str) or not ID_PATTERN.match(raw["id"])):
        found.append(("id", f"an id looks like GD-PCIE-001 (letters, digits, dashes), got {raw['id']!r}"))
    for key in ("title", "message", "why"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            found.append((key, "expected a non-empty string"))
    if "severity" in raw and raw["severity"] not in SEVERITIES:
        found.append(("severity", f"expected one of {', '.join(SEVERITIES)}, got {raw['severity']!r}"))
    if "category" in raw and raw["category"] not in CATEGORIES:
        found.append(("category", f"expected one of {', '.join(CATEGORIES)}, got {raw['category']!r}"))
    for_each = raw.get("for_each")
    if for_each is not None and for_each not in LISTS:
        found.append(("for_each", f"expected one of {', '.join(LISTS)}, got {for_each!r}"))
        for_each = None
    raw = _expanded(raw, for_each)
    for key in ("references", "refines"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            found.append((key, "expected a list of strings"))
    errors = error_texts(raw.get("errors", []), "errors", found)
    _check_silent(raw, errors, found)
    for key in ("overrides", "catch_all"):
        if key in raw and not isinstance(raw[key], bool):
            found.append((key, "expected true or false"))
    if "when" in raw:
        conditions.validate(raw["when"], "when", for_each, found)
    if "applies" in raw:
        _check_applies(raw["applies"], for_each, found)
    for key in ("message", "why", "title"):
        if isinstance(raw.get(key), str):
            _check_template(raw[key], key, for_each, found)
    steps = _fix_steps(raw.get("fix", []), for_each, found)
    problems = [Problem(name, _line(lines, path, where), rid, where, msg) for where, msg in found]
    if problems:
        return None, problems
    rule = Rule(
        id=raw["id"],
        title=raw["title"].strip(),
        severity=raw["severity"],
        category=raw["category"],
        when=raw["when"],
        message=raw["message"].strip(),
        why=" ".join(raw["why"].split()),
        for_each=for_each,
        applies=raw.get("applies"),
        references=tuple(raw.get("references", [])),
        errors=errors,
        silent=" ".join(raw["silent"].split()) if isinstance(raw.get("silent"), str) else "",
        refines=tuple(raw.get("refines", [])),
        catch_all=bool(raw.get("catch_all", False)),
        fix=steps,
        overrides=bool(raw.get("overrides", False)),
        file=name,
        line=line,
    )
    return rule, []


def error_texts(value: Any, where: str, found: list[tuple[str, str]]) -> tuple[ErrorText, ...]:
    """The `errors:` list of a rule or an explain entry: each item the text alone, or `{text: ..., source:
    ...}` with where that wording was seen; its whitespace (a message pasted over two lines) read as one
    space, as explain reads messages. Problems go into `found`."""
    if not isinstance(value, list):
        found.append((where, "expected a list of error texts"))
        return ()
    out = []
    for n, item in enumerate(value):
        at = f"{where}[{n}]"
        if isinstance(item, str) and item.strip():
            out.append(ErrorText(" ".join(item.split())))
        elif isinstance(item, dict):
            found += key_problems(item, ("text",), ("source",))
            text, source = item.get("text"), item.get("source", "")
            if not isinstance(text, str) or not text.strip():
                found.append((f"{at}.text", "expected a non-empty string"))
            elif not isinstance(source, str):
                found.append((f"{at}.source", "expected a string (a URL, or repository@commit:path:line)"))
            else:
                out.append(ErrorText(" ".join(text.split()), source.strip()))
        else:
            found.append((at, "expected an error text, or a mapping with 'text' and 'source'"))
    return tuple(out)


def _check_silent(raw: dict, errors: tuple, found: list[tuple[str, str]]) -> None:
    """`silent:` is a reason, and a rule with errors is not silent (a rule with neither is refused by
    `rules validate`: unspoken_problems)."""
    silent = raw.get("silent")
    if silent is not None and (not isinstance(silent, str) or not silent.strip()):
        found.append(("silent", "expected a non-empty string: why no program prints an error for this"))
    elif silent is not None and raw.get("errors"):
        found.append(("silent", "a rule with errors: is not silent; keep one of the two"))


def _check_applies(cond: Any, for_each: Optional[str], found: list[tuple[str, str]]) -> None:
    """`applies:` has the grammar of `when:` and is judged once for the host, before any item of for_each:
    it names no fact of an item (`.build`, `gpus[i].name`)."""
    item_facts = _item_facts(cond)
    if for_each and item_facts:
        found.append(
            (
                "applies",
                f"names a fact of an item ({', '.join(item_facts)}): applies is judged once for the host, "
                "before for_each; put it in when",
            )
        )
        return
    conditions.validate(cond, "applies", None, found)


def _item_facts(cond: Any) -> list[str]:
    if isinstance(cond, list):
        return [name for part in cond for name in _item_facts(part)]
    if not isinstance(cond, dict):
        return []
    fact = cond.get("fact")
    own = [fact] if isinstance(fact, str) and (fact.startswith(".") or "[i]" in fact) else []
    return own + [name for key, value in cond.items() if key != "fact" for name in _item_facts(value)]


def _expanded(raw: dict, for_each: Optional[str]) -> dict:
    """The rule with the relative fact names of its condition and templates (`.pcie.gen_current`, in a
    rule with `for_each: gpus`) written out (`gpus[i].pcie.gen_current`): what follows sees only those."""
    if not for_each:
        return raw
    raw = dict(raw)
    if "when" in raw:
        raw["when"] = conditions.expand(raw["when"], for_each)
    for key in ("message", "why", "title"):
        if isinstance(raw.get(key), str):
            raw[key] = template.expand(raw[key], for_each)
    if isinstance(raw.get("fix"), list):
        raw["fix"] = [_expanded_step(step, for_each) for step in raw["fix"]]
    return raw


def _expanded_step(step: Any, for_each: str) -> Any:
    if not isinstance(step, dict):
        return step
    step = dict(step)
    if isinstance(step.get("text"), str):
        step["text"] = template.expand(step["text"], for_each)
    if isinstance(step.get("argv"), list):
        step["argv"] = [template.expand(a, for_each) if isinstance(a, str) else a for a in step["argv"]]
    return step


def _check_template(text: str, where: str, for_each: Optional[str], found: list) -> None:
    for fact, flt in template.placeholders(text):
        conditions.check_fact_name(fact, where, for_each, found)
        if flt is not None and flt not in template.FILTERS:
            found.append((where, f"unknown filter '|{flt}' (expected: {', '.join(template.FILTERS)})"))


def _fix_steps(raw: Any, for_each: Optional[str], found: list) -> tuple[FixStep, ...]:
    if not isinstance(raw, list):
        found.append(("fix", "expected a list of steps"))
        return ()
    steps = []
    for i, step in enumerate(raw):
        where = f"fix[{i}]"
        if not isinstance(step, dict):
            found.append((where, "a fix step is a mapping with 'kind' and 'argv' or 'text'"))
            continue
        for key in step:
            if key not in FIX_KEYS:
                found.append((f"{where}.{key}", f"unknown key (expected: {', '.join(FIX_KEYS)})"))
        kind = step.get("kind")
        if kind not in FIX_KINDS:
            found.append((f"{where}.kind", f"expected one of {', '.join(FIX_KINDS)}, got {kind!r}"))
        argv = step.get("argv", [])
        text = step.get("text", "")
        if not isinstance(argv, list) or not all(isinstance(a, str) and a for a in argv):
            found.append(
                (f"{where}.argv", "expected a list of non-empty strings (one per argument; no shell)")
            )
            argv = []
        if not isinstance(text, str):
            found.append((f"{where}.text", "expected a string"))
            text = ""
        resolver, args = _resolver(step, where, found)
        if kind == "manual" and not text:
            found.append((where, "a manual step needs 'text'"))
        if resolver and argv:
            found.append((where, "a step names a resolver or gives 'argv', not both"))
        if resolver and not text:
            found.append((where, "a step that names a resolver needs 'text' (what reports show for it)"))
        if kind in FIX_KINDS and kind not in ("manual", "env") and not argv and not resolver:
            found.append((where, f"a {kind} step needs 'argv'"))
        if kind == "env" and not (argv or text):
            found.append((where, "an env step needs 'text' or 'argv'"))
        for a in argv:
            _check_template(a, f"{where}.argv", for_each, found)
        _check_template(text, f"{where}.text", for_each, found)
        steps.append(FixStep(kind=str(kind), argv=tuple(argv), text=text, resolver=resolver, args=args))
    return tuple(steps)


def _resolver(step: dict, where: str, found: list) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A step's resolver and its args, checked against the engine's table of resolver names
    (resolver_names.py: which resolvers exist and which args and values each accepts); resolvers only run
    in the planner."""
    name, args = step.get("resolver"), step.get("args")
    if name is None:
        if args is not None:
            found.append((f"{where}.args", "'args' go with 'resolver'"))
        return "", ()
    accepts = RESOLVER_ARGS.get(name) if isinstance(name, str) else None
    if accepts is None:
        found.append(
            (f"{where}.resolver", f"unknown resolver {name!r} (expected one of {', '.join(RESOLVER_ARGS)})")
        )
        return str(name), ()  # the step is refused; naming it here keeps "needs 'argv'" from adding noise
    if args is None:
        return name, ()
    if not isinstance(args, dict):
        found.append((f"{where}.args", "expected a mapping of argument names to strings"))
        return name, ()
    for key, value in args.items():
        accepted = accepts.get(key) if isinstance(key, str) else None
        if accepted is None:
            expected = ", ".join(accepts) or "none"
            found.append(
                (f"{where}.args.{key}", f"resolver {name} takes no argument {key!r} (expected: {expected})")
            )
        elif not isinstance(value, str) or not value:
            found.append((f"{where}.args.{key}", "expected a non-empty string"))
        elif accepted and value not in accepted:
            found.append((f"{where}.args.{key}", f"expected one of {', '.join(accepted)}, got {value!r}"))
    return name, tuple(sorted((str(k), str(v)) for k, v in args.items()))


def _merge(rules: list[Rule], shipped: set[str]) -> tuple[list[Rule], list[Problem]]:
    """One rule per id; a later rule replaces an earlier one only with `overrides: true`. A rule that
    replaces a shipped one (from a file in `shipped`) carries where that was (Rule.replaces)."""
    by_id: dict[str, Rule] = {}
    problems = []
    for rule in rules:
        first = by_id.get(rule.id)
        if first is None:
            by_id[rule.id] = rule
        elif rule.overrides:
            replaced = f"{Path(first.file).name}:{first.line}" if first.file in shipped else first.replaces
            by_id[rule.id] = rule._replace(replaces=replaced)
        else:
            problems.append(
                Problem(
                    rule.file,
                    rule.line,
                    rule.id,
                    "id",
                    f"duplicate id (first defined at {first.file}:{first.line}); "
                    "add 'overrides: true' to replace it",
                )
            )
    return list(by_id.values()), problems
