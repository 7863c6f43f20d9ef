"""`gpudoctor check`: judge this host (or a snapshot) and each Python environment; one verdict per run."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from . import CommandError, Outcome, problems, use_color
from ._shared import collect, print_plan, refuse_bad_python, report_width, warn

ONE_ENVIRONMENT_FORMATS = ("junit", "prometheus")
IMAGE_TIMEOUT = 600.0  # reading an image's layers (several GB stream at about 100 MB/s); then the check's own


def run(
    snapshot: Optional[str] = None,
    python: tuple[str, ...] = (),
    rules: tuple[str, ...] = (),
    fmt: str = "text",
    fail_on: Optional[str] = None,
    profile: str = "workstation",
    policy: Optional[str] = None,
    timeout: Optional[float] = None,
    data_dir: Optional[str] = None,
    plan: bool = False,
    deep: bool = False,
    no_python: bool = False,
    fail_on_unknown: Optional[bool] = None,
    since: Optional[str] = None,
    no_redact: bool = False,
    image: Optional[str] = None,
    lock: Optional[str] = None,
    all_envs: bool = False,
) -> Outcome:
    from ..profiles import PROFILES, resolve_fail_on, resolve_timeout

    python = list(python)
    prof = PROFILES[profile]
    if plan and fmt != "text":
        raise CommandError(
            "--plan goes with --format text; `gpudoctor plan --format json` prints the plan as JSON"
        )
    if no_python and (python or deep):
        raise CommandError(
            "--no-python judges no Python environment: it goes with neither --python nor --deep"
        )
    refuse_subject_conflicts(image, lock, python, no_python, deep)
    if all_envs:
        refuse_all_envs_conflicts(snapshot, python, no_python, image or lock, fmt)
    if len(python) > 1 and fmt in ONE_ENVIRONMENT_FORMATS:
        raise CommandError(f"--format {fmt} judges one environment: run it once for each --python")
    if data_dir and not snapshot and not os.path.exists(data_dir):
        # Live, a missing path would be judged by whichever mount covers where it would be: refuse.
        raise CommandError(f"--data-dir {data_dir}: no such file or directory on this host")
    since_seconds = None
    if since is not None:
        from ..probes.kernel_log import parse_duration

        try:
            since_seconds = parse_duration(since)
        except ValueError as e:
            raise CommandError(f"--since: {e}") from None
    warn_empty_rule_dirs(rules)
    subject = image or lock
    inspects = not no_python and not subject and not all_envs and ("python" in prof.probes or deep)
    host, source, deadline = collect(snapshot, python, resolve_timeout(prof, timeout, deep), inspects)
    labels = None
    if all_envs:
        host, labels = every_environment(host)
    given = {}
    if subject:
        opened = open_subject(host, image, lock)
        host, given = opened.host, opened.facts
        deadline.restart()
    # The rest is imported and read once the host is inspecting the Python environment, so that both go on
    # together (a child process left running by an error below is killed on the way out: entry.console).
    from ..engine.loader import RuleLoadError
    from ..pipeline.check import run_checks
    from ..pipeline.verdict import decide
    from ..policy import PolicyError, load

    try:
        pol = load(policy)
    except PolicyError as e:
        raise problems("policy has", e) from None
    fail = resolve_fail_on(prof, fail_on, pol.fail_on if pol else None)

    try:
        results = run_checks(
            host,
            source,
            deadline,
            list(rules),
            profile=prof,
            policy=pol,
            data_dir=os.path.abspath(data_dir) if data_dir else None,
            deep=deep,
            fail_unknown=fail_on_unknown,
            no_python=no_python,
            since=since_seconds,
            given=given,
        )
    except RuleLoadError as e:
        raise problems("rule files have", e) from None
    except PolicyError as e:
        raise problems("policy has", e) from None
    refuse_bad_python(results)
    verdicts = [decide(r, fail) for r in results]  # decided once, handed to every renderer
    redact = None if no_redact or fmt != "json" else _redactor()
    if len(results) == 1 and labels is None:
        render_check(results[0], fmt, verdicts[0], prof, redact)
    else:
        render_checks(results, fmt, verdicts, prof, redact, labels)
    if plan:
        for result in results:
            sys.stdout.write("\n")
            print_plan(result, "text")
    return Outcome(max(v.code for v in verdicts), results[0].unanswered())


def refuse_subject_conflicts(
    image: Optional[str], lock: Optional[str], python: list, no_python: bool, deep: bool
) -> None:
    """--image and --lock each stand for the Python environment judged: one of them, without --python,
    --no-python or --deep (nothing of an image or a lockfile is run)."""
    if image and lock:
        raise CommandError("--image and --lock each judge one environment: give one of them")
    flag = "--image" if image else "--lock" if lock else None
    if flag and (python or no_python):
        raise CommandError(
            f"{flag} judges its own Python environment: it goes with neither --python nor --no-python"
        )
    if flag and deep:
        raise CommandError(
            f"--deep runs programs in the environment; {flag} judges it without running anything"
        )


def refuse_all_envs_conflicts(
    snapshot: Optional[str], python: list, no_python: bool, subject: Optional[str], fmt: str
) -> None:
    """--all-envs judges every environment on this machine: not with a snapshot, --python (one
    environment), --no-python, --image or --lock, nor a format that holds one environment."""
    if snapshot:
        raise CommandError("--all-envs reads this machine's files: a snapshot holds none; drop one of them")
    if python:
        raise CommandError("--all-envs judges every environment; --python judges the ones named: give one")
    if no_python or subject:
        flag = "--no-python" if no_python else "--image or --lock"
        raise CommandError(f"--all-envs judges every Python environment: it does not go with {flag}")
    if fmt in ONE_ENVIRONMENT_FORMATS:
        raise CommandError(
            f"--format {fmt} judges one environment: use text, json or markdown with --all-envs"
        )


def every_environment(host: Any) -> tuple[Any, dict]:
    """The host whose Python environments are every one `gpudoctor envs` finds (envs/target.py), and how
    each report section names its environment: {interpreter: {name, kind, prefix, found_by, problem}}. None
    found is a CommandError."""
    from ..envs.target import EnvsHost, key
    from .envs import find_all

    envs = find_all(host)
    if not envs:
        raise CommandError("--all-envs: no Python environment found on this machine")
    labels = {
        key(e): {
            "name": e.name,
            "kind": e.kind,
            "prefix": e.prefix,
            "found_by": list(e.found_by),
            "problem": e.problem or None,
        }
        for e in envs
    }
    return EnvsHost(host, envs), labels


def open_subject(
    host: Any,
    image: Optional[str],
    lock: Optional[str],
    machine: Optional[str] = None,
    python: Optional[str] = None,
) -> Any:
    """The image or lockfile read (subject.py) for `machine` (default: the host's) and, a lockfile, for
    `python` (default: the host's interpreter's); one that cannot be read is a CommandError (exit 2)."""
    from .. import subject

    if image:
        from ..image.view import ImageError

        try:
            return subject.open_image(host, image, timeout=IMAGE_TIMEOUT, machine=machine)
        except ImageError as e:
            raise CommandError(f"--image {image}: {e.reason}") from None
    from ..lockfile import LockError

    try:
        return subject.open_lock(host, str(lock), machine=machine, python=python)
    except LockError as e:
        raise CommandError(f"--lock {lock}: {e.reason}") from None


def warn_empty_rule_dirs(paths: tuple[str, ...] | list[str]) -> None:
    """A --rules directory without rule files adds nothing: say so rather than judge quietly without it."""
    for path in paths:
        if os.path.isdir(path) and not any(
            n.endswith((".yaml", ".yml")) for _top, _dirs, names in os.walk(path) for n in names
        ):
            warn(f"--rules {path}: no *.yaml rule files in this directory; checking with the other rules")


def _redactor() -> Any:
    """The JSON report is made to be shared: home directories and user names redacted, as `facts` does."""
    from ..redact import redact_report, this_machine

    identity = this_machine()
    return lambda data: redact_report(data, identity)


def render_checks(
    results: list, fmt: str, verdicts: list, prof: Any, redact: Any = None, labels: Optional[dict] = None
) -> None:
    """Several environments (--python repeated, --all-envs): one report each, in the order given; `labels`
    (--all-envs) name each environment by what found it, and its text shows the machine once
    (report/all_envs.py)."""
    if fmt == "json":
        from ..report import json_report

        named = [labels.get(r.target.python) for r in results] if labels is not None else None
        sys.stdout.write(json_report.render_many(results, verdicts, redact=redact, labels=named))
        return
    if labels is not None and fmt == "text" and not prof.one_line:  # --all-envs: the machine once
        from ..report import all_envs

        if use_color() and not prof.plain:
            all_envs.print_rich(results, verdicts, labels)
        else:
            sys.stdout.write(all_envs.render_plain(results, verdicts, labels))
        return
    from ..report.safe import terminal_text

    for n, (result, verdict) in enumerate(zip(results, verdicts), 1):
        exe = result.facts.value("python.executable") or result.facts.get("python.executable").unknown
        label = (labels or {}).get(result.target.python)
        problem = ""
        if label:
            exe = (
                f"{label['name']} ({label['kind']}; {', '.join(label['found_by'])}) at {result.target.python}"
            )
            problem = f"Broken: {terminal_text(label['problem'])}\n" if label["problem"] else ""
            problem += "\n" if problem and fmt == "markdown" else ""
            if prof.one_line:  # the line goes to stderr (check.render_check): say whose it is there
                sys.stderr.write(f"{terminal_text(label['name'])}: ")
        if not prof.one_line:
            heading = f"Environment {n} of {len(results)}: {terminal_text(str(exe))}"
            sys.stdout.write(
                ("\n" if n > 1 else "")
                + (f"## {heading}\n\n" if fmt == "markdown" else f"{heading}\n")
                + problem
            )
        render_check(result, fmt, verdict, prof)


def render_check(result: Any, fmt: str, verdict: Any, prof: Any, redact: Any = None) -> None:
    """One environment's report; `verdict` (pipeline/verdict.py) is the run's, the renderers only show it."""
    if fmt == "json":
        from ..report import json_report

        sys.stdout.write(json_report.render(result, verdict, redact=redact))
    elif fmt == "junit":
        from ..report import junit

        sys.stdout.write(junit.render(result, verdict))
    elif fmt == "markdown":
        from ..report import markdown

        text = markdown.render(result, verdict)
        sys.stdout.write(text)
        _append_step_summary(text)
    elif fmt == "prometheus":
        from ..report import prometheus

        sys.stdout.write(prometheus.render(result, verdict))
    elif prof.one_line:
        from ..report import oneline

        # stderr: an entrypoint's stdout belongs to the command it runs next.
        sys.stderr.write(oneline.render(result, verdict))
    elif use_color() and not prof.plain:
        from ..report.text import print_rich

        print_rich(result, verdict)
    else:
        from ..report.text import render_plain

        sys.stdout.write(render_plain(result, verdict, width=report_width(), wrap=sys.stdout.isatty()))


def _append_step_summary(text: str) -> None:
    """GitHub Actions shows what a step appends to $GITHUB_STEP_SUMMARY on the run's page."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        warn(f"cannot append to GITHUB_STEP_SUMMARY ({path}): {e}")
