"""Fix plans: the check's findings, its facts and the knowledge tables -> one ordered FixPlan (docs/plans.md).

The planner only plans: it resolves the fix steps that name a resolver, writes every Python package step
for the installer that manages the target environment, resolves steps that pin one package differently
into one, merges duplicates and orders the rest: system changes, then the Python environment, reboots
last. Every command is an argument list, never a shell string. Nothing here runs anything.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from .engine.model import SEVERITY_RANK, Finding, FixStep
from .engine.resolver_names import RESOLVER_ARGS
from .engine.template import SAFE_ARG
from .knowledge import knowledge
from .resolvers import Resolution, resolve

if TYPE_CHECKING:
    from .facts import Facts
    from .knowledge import Knowledge

RISKS = ("system", "python-env", "reboot")  # also the order steps run in
KIND_RISK = {
    "pip": "python-env",
    "uv": "python-env",
    "conda": "python-env",
    "apt": "system",
    "env": "system",
    "driver": "system",
    "command": "system",
    "manual": "system",
    "reboot": "reboot",
}
PACKAGE_KINDS = ("pip", "uv", "conda")
INSTALLER_NOTES = {
    "conda": "this is a conda environment: the step uses pip inside it, because these wheels are published "
    "on a pip index and not as conda packages; `conda list` shows them with channel pypi",
    "poetry": "poetry manages this environment: the step installs into it with its interpreter's pip, and "
    "the next `poetry install` or `poetry sync` puts back what poetry.lock says; to keep the change, add the "
    "pin with `poetry add` (for a wheel index, after `poetry source add --priority explicit NAME URL`)",
}
REBOOT_ARGV = ("sudo", "reboot")


@dataclass(frozen=True)
class PlanStep:
    kind: str  # pip uv conda apt env driver reboot command manual
    argv: tuple[str, ...]  # empty for steps a person carries out (manual, driver)
    text: str  # what to do when there is no argv; else a short note
    risk: str  # python-env | system | reboot
    rules: tuple[str, ...]  # the rules whose findings it fixes
    why: tuple[str, ...]  # one line per finding: "GD-FW-001 (error): <message>"
    resolver: str = ""  # the resolver that computed it
    minor_compat: bool = False  # what it installs runs only through CUDA minor-version compatibility
    reasons: tuple[str, ...] = ()  # the resolver's reasoning
    notes: tuple[str, ...] = ()  # what it leaves out or assumes; installer caveats

    @property
    def command(self) -> str:
        """The command as a user can paste it into a POSIX shell."""
        return shlex.join(self.argv) if self.argv else ""


@dataclass(frozen=True)
class FixPlan:
    steps: tuple[PlanStep, ...]
    notes: tuple[str, ...]  # conflicts resolved, findings without a fix
    python: Optional[str]  # the target interpreter
    installer: Optional[str]  # what manages its environment: pip, uv, conda, poetry

    def counts(self) -> dict[str, int]:
        return {risk: sum(1 for s in self.steps if s.risk == risk) for risk in RISKS}


@dataclass
class _Draft:
    """A step before conflicts, duplicates and order are settled."""

    kind: str
    argv: tuple[str, ...]
    text: str
    risk: str
    rules: tuple[str, ...]
    why: tuple[str, ...]
    severity: int
    order: int
    resolver: str = ""
    minor_compat: bool = False
    reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    op: str = ""  # install | uninstall, for package steps the planner understands
    packages: tuple[str, ...] = ()  # requirement strings of an install
    dropped: bool = False  # left out by a conflict


@dataclass(frozen=True)
class _Env:
    """The target Python environment: its interpreter (when it can go into a command) and its installer,
    and the index mirrors to use (--index-mirror)."""

    executable: Optional[str]
    installer: str
    problem: str  # why there is no usable interpreter path
    mirrors: tuple[tuple[str, str], ...] = ()

    def index(self, url: Optional[str]) -> Optional[str]:
        """`url`, on the first mirror whose original it starts with."""
        for original, mirror in self.mirrors:
            if url and url.startswith(original):
                return mirror + url[len(original) :]
        return url


def target_env(facts: Facts, mirrors: tuple[tuple[str, str], ...] = ()) -> _Env:
    exe, installer = facts.get("python.executable"), facts.value("python.installer")
    installer = installer if installer in ("pip", "uv", "conda", "poetry") else "pip"
    if not exe.known:
        return _Env(None, installer, f"python.executable is unknown ({exe.unknown})", mirrors)
    if not isinstance(exe.value, str) or not SAFE_ARG.match(exe.value):
        return _Env(None, installer, f"the interpreter path {exe.value!r} is not a plain token", mirrors)
    return _Env(exe.value, installer, "", mirrors)


def package_name(requirement: str) -> str:
    """'torchvision==0.20.1+cu124' -> 'torchvision'; 'tensorflow[and-cuda]==2.20.0' -> 'tensorflow'."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\[=<>!~;@ ]", requirement, maxsplit=1)[0]).lower()


def pip_step(op: str, packages: tuple[str, ...], index_url: Optional[str], env: _Env) -> tuple[str, tuple]:
    """(kind, argv) of a pip install/uninstall for the environment's installer (docs/plans.md)."""
    exe = env.executable or ""
    index_url = env.index(index_url)
    index = ("--index-url", index_url) if index_url else ()
    if env.installer == "uv":  # uv pip uninstall never asks, and has no -y
        return "uv", ("uv", "pip", op, "--python", exe, *packages, *index)
    yes = ("-y",) if op == "uninstall" else ()
    return "pip", (exe, "-m", "pip", op, *yes, *packages, *index)


def _literal_pip(argv: tuple[str, ...]) -> Optional[tuple[str, tuple[str, ...], Optional[str]]]:
    """(op, packages, index URL) of `<python> -m pip install|uninstall [-y] PKG... [--index-url URL]`, the
    shape the planner can rewrite for another installer; None for anything else."""
    if len(argv) < 5 or argv[1:3] != ("-m", "pip") or argv[3] not in ("install", "uninstall"):
        return None
    op, rest, packages, index = argv[3], list(argv[4:]), [], None
    while rest:
        arg = rest.pop(0)
        if op == "uninstall" and arg in ("-y", "--yes"):
            continue
        if op == "install" and arg == "--index-url" and rest and index is None:
            index = rest.pop(0)
            continue
        if arg.startswith("-"):
            return None
        packages.append(arg)
    return (op, tuple(packages), index) if packages else None


# --- drafts from findings -------------------------------------------------------------------------------


def _why(finding: Finding) -> str:
    return f"{finding.rule.id} ({finding.severity}): {finding.message}"


def _base(finding: Finding, order: int) -> dict:
    return {
        "rules": (finding.rule.id,),
        "why": (_why(finding),),
        "severity": SEVERITY_RANK[finding.severity],
        "order": order,
    }


def _literal(step: FixStep, finding: Finding, order: int, env: _Env) -> list[_Draft]:
    base = _base(finding, order)
    shape = _literal_pip(step.argv) if step.kind == "pip" and step.argv else None
    if shape is None or env.executable is None or step.argv[0] != env.executable:
        return [_Draft(step.kind, step.argv, step.text, KIND_RISK.get(step.kind, "system"), **base)]
    op, packages, index = shape
    kind, argv = pip_step(op, packages, index, env)
    notes = (INSTALLER_NOTES[env.installer],) if env.installer in INSTALLER_NOTES and op == "install" else ()
    return [
        _Draft(
            kind,
            argv,
            step.text,
            "python-env",
            op=op,
            packages=packages if op == "install" else (),
            notes=notes,
            **base,
        )
    ]


def resolver_args(step: FixStep, finding: Finding) -> tuple[tuple[str, str], ...]:
    """The step's resolver arguments, with downgrade=no for a finding below error severity: a warning's
    fix never installs an older release than the one installed (docs/plans.md). Resolvers that take no such
    argument (driver, base_image) get none."""
    args = tuple(step.args)
    takes = "downgrade" in RESOLVER_ARGS.get(step.resolver, {})
    if not takes or finding.severity == "error" or any(k == "downgrade" for k, _ in args):
        return args
    return (*args, ("downgrade", "no"))


def _resolved(
    step: FixStep, finding: Finding, order: int, env: _Env, facts: Facts, kb: Knowledge
) -> list[_Draft]:
    res = resolve(step.resolver, facts, kb, finding.item, resolver_args(step, finding))
    base = _base(finding, order)
    risk = KIND_RISK.get(step.kind, "system")
    if not res.ok:
        text = f"{res.subject}: {res.reasons[0]}." + (f" {step.text}" if step.text else "")
        drafts = [_Draft("manual", (), text, risk, resolver=res.resolver, reasons=res.reasons[1:], **base)]
        if res.needs_cuda:  # only a newer driver runs this framework here
            drafts += _driver_drafts(
                resolve("driver", facts, kb, None, (("cuda", res.needs_cuda),)), facts, base
            )
        return drafts
    if res.resolver == "driver":
        return _driver_drafts(res, facts, base)
    if res.base_cuda:
        return [_base_image_draft(res, res.base_cuda, step.kind, risk, base)]
    if not res.packages:
        return []
    if env.executable is None:
        url = env.index(res.index_url)
        text = f"Install {' '.join(res.packages)}" + (f" from {url}" if url else "")
        return [
            _Draft(
                "manual",
                (),
                f"{text} into the target environment ({env.problem}).",
                risk,
                resolver=res.resolver,
                reasons=res.reasons,
                notes=res.notes,
                **base,
            )
        ]
    notes = res.notes + ((INSTALLER_NOTES[env.installer],) if env.installer in INSTALLER_NOTES else ())
    drafts = []
    if res.uninstall:
        kind, argv = pip_step("uninstall", res.uninstall, None, env)
        drafts.append(_Draft(kind, argv, "", "python-env", resolver=res.resolver, op="uninstall", **base))
    kind, argv = pip_step("install", res.packages, res.index_url, env)
    drafts.append(
        _Draft(
            kind,
            argv,
            "",
            "python-env",
            resolver=res.resolver,
            minor_compat=res.minor_compat,
            reasons=res.reasons,
            notes=notes,
            op="install",
            packages=res.packages,
            **base,
        )
    )
    return drafts


def _base_image_draft(res: Resolution, release: str, kind: str, risk: str, base: dict) -> _Draft:
    """The base_image resolver's answer as a step a person carries out: rebuild the image on the nvidia/cuda
    release it names (tags read <release>-<flavour>-<os>; the flavour and OS stay the image's own). As with
    the driver's answer, the text is the answer's own; the rule's text is shown only when there is none."""
    major_minor = ".".join(release.split(".")[:2])
    text = (
        f"Rebuild the image on an nvidia/cuda:{release}-* base (the flavour and OS it uses now), whose "
        f"NVIDIA_REQUIRE_CUDA asks cuda>={major_minor}; its frameworks and CUDA libraries must then be "
        f"builds for CUDA {major_minor} or older."
    )
    return _Draft(kind, (), text, risk, resolver=res.resolver, reasons=res.reasons, notes=res.notes, **base)


def _driver_drafts(res: Resolution, facts: Facts, base: dict) -> list[_Draft]:
    """The driver resolver's answer as steps: the upgrade (a person carries it out, since how depends on
    how the driver was installed), then the reboot that loads it. None when the driver already meets it."""
    need = res.driver
    if not res.ok:
        return [
            _Draft(
                "driver",
                (),
                f"Upgrade the NVIDIA driver: {res.reasons[0]}.",
                "system",
                resolver="driver",
                **base,
            )
        ]
    if need is None:
        return []
    branch = (
        f" from branch R{need.branch} ({need.designation}, supported until {need.eol})" if need.branch else ""
    )
    text = (
        f"Upgrade the NVIDIA driver (now {facts.value('driver.version') or 'unknown'}) to {need.minimum} or "
        f"newer{branch}, for CUDA {need.cuda}. Install it the way the current driver came (distribution "
        "packages, NVIDIA's CUDA repository or the .run installer); in a container, change the host's driver."
    )
    reboot = "Reboot to load the new driver's kernel module; then run `gpudoctor plan` again."
    return [
        _Draft(
            "driver",
            (),
            text,
            "system",
            resolver="driver",
            minor_compat=need.minor_compat,
            reasons=res.reasons,
            **base,
        ),
        _Draft("reboot", REBOOT_ARGV, reboot, "reboot", **base),
    ]


# --- settling conflicts, duplicates and order -----------------------------------------------------------


def _priority(d: _Draft) -> tuple:
    """Which of two conflicting installs wins: a resolver's (computed for this host), then the more severe
    finding's, then the earlier one."""
    return (0 if d.resolver else 1, -d.severity, d.order)


def _conflicts(drafts: list[_Draft]) -> list[str]:
    """Drop each install that pins a package another, higher-priority install pins differently; say why."""
    notes: list[str] = []
    kept: list[_Draft] = []
    for draft in sorted((d for d in drafts if d.op == "install"), key=_priority):
        pins = {package_name(p): p for p in draft.packages}
        for winner in kept:
            clash = [
                (n, pins[n], p)
                for p in winner.packages
                for n in [package_name(p)]
                if n in pins and pins[n] != p
            ]
            if clash:
                name, lost, won = clash[0]
                because = (
                    "it was computed from the knowledge tables for this host"
                    if winner.resolver and not draft.resolver
                    else "its finding is more severe"
                    if winner.severity > draft.severity
                    else "it comes first"
                )
                notes.append(
                    f"{name}: {', '.join(draft.rules)} wanted {lost}, {', '.join(winner.rules)} wanted "
                    f"{won}; kept {won} ({because}) and left out `{shlex.join(draft.argv)}`"
                )
                draft.dropped = True
                break
        if not draft.dropped:
            kept.append(draft)
    lost = {(d.order, d.resolver) for d in drafts if d.dropped and d.resolver}
    for d in drafts:  # a resolver's uninstall goes with its install
        d.dropped = d.dropped or (d.op == "uninstall" and (d.order, d.resolver) in lost)
    return notes


def _merge(drafts: list[_Draft]) -> list[_Draft]:
    """One step per distinct command (or, without one, per distinct text), for every finding that asked."""
    merged: dict[tuple, _Draft] = {}
    for d in drafts:
        key = (d.kind, d.argv, "" if d.argv else d.text)
        first = merged.get(key)
        if first is None:
            merged[key] = d
            continue
        first.rules += tuple(r for r in d.rules if r not in first.rules)
        first.why += tuple(w for w in d.why if w not in first.why)
        first.notes += tuple(n for n in d.notes if n not in first.notes)
    return list(merged.values())


def build_plan(
    findings: list[Finding],
    facts: Facts,
    kb: Optional[Knowledge] = None,
    mirrors: tuple[tuple[str, str], ...] = (),
) -> FixPlan:
    """The plan for `findings` (as Result.findings orders them: most severe first). `mirrors` are
    (original, mirror) URL prefixes: an index URL that starts with an original is planned on its mirror
    (`--index-mirror`, for hosts that reach the package indexes through a mirror)."""
    if kb is None:
        kb = knowledge()
    env = target_env(facts, mirrors)
    drafts: list[_Draft] = []
    without: list[str] = []
    for n, finding in enumerate(findings):
        if not finding.fix:
            without.append(f"{finding.rule.id} ({finding.severity})")
        for step in finding.fix:
            if step.resolver:
                drafts += _resolved(step, finding, n, env, facts, kb)
            else:
                drafts += _literal(step, finding, n, env)
    notes = _conflicts(drafts)
    kept = _merge([d for d in drafts if not d.dropped])
    kept.sort(key=lambda d: RISKS.index(d.risk))  # stable: within a risk class, the findings' order
    if without:
        notes.append(f"no fix steps, so not in the plan: {', '.join(dict.fromkeys(without))}")
    steps = tuple(
        PlanStep(
            d.kind, d.argv, d.text, d.risk, d.rules, d.why, d.resolver, d.minor_compat, d.reasons, d.notes
        )
        for d in kept
    )
    return FixPlan(steps, tuple(notes), env.executable, facts.value("python.installer"))
