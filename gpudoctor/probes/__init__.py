"""Probes: one module per domain. Each has pure parse functions (text in, data out) and one
`probe(host) -> dict[str, Fact]` entry that reads only through the Host and never judges.

A probe module declares, beside its reading code, everything else gpudoctor needs to know of it: the facts
it produces (FACT_SPECS: name, type, unit, meaning), its PROBE (a ProbeSpec: its name, the profiles that run
it, whether it reads the Python environment, its options) and, in a `derive(facts)` function, the facts it
computes from facts alone (those that need the knowledge tables are computed in gpudoctor/derive.py).
tools/gen_facts.py gathers them into gpudoctor/fact_table.py, so that the schema, the profiles and the
registry are known without importing a probe. A probe that crashed or ran out of time leaves the facts of
the sections it owns (the heads of its FACT_SPECS) unknown with that reason.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, NamedTuple, Optional

from ..fact_table import PROBES as PROBE_ROWS
from ..facts import Fact, Facts

Probe = Callable[..., "dict[str, Fact]"]

# The profiles (gpudoctor/profiles.py) a probe may belong to.
EVERY_PROFILE = ("workstation", "ci", "preflight")
FULL_PROFILES = ("workstation", "ci")  # not preflight: the probe is too slow for its 5 s deadline


class ProbeSpec(NamedTuple):  # a NamedTuple: `check` builds these at start-up, a dataclass costs 0.5 ms more
    """A probe as its module declares it (PROBE); tools/gen_facts.py adds `module`, `heads` and `derives`."""

    name: str  # the registry name: `check` statuses, profiles and --json name the probe by it
    profiles: tuple[str, ...] = FULL_PROFILES  # the profiles that run it; () for --deep alone
    per_env: bool = False  # it reads the Python environment: run once per interpreter judged (--python)
    options: tuple[str, ...] = ()  # keyword arguments of probe() the check passes: data_dir, since
    deep: bool = False  # it runs with --deep only (child processes that import each framework)
    module: str = ""  # its module in gpudoctor/probes/
    heads: tuple[str, ...] = ()  # the fact sections it owns: the heads of its FACT_SPECS
    derives: bool = False  # its module has derive(facts): facts computed from facts alone, after the probes


DECLARED: tuple[ProbeSpec, ...] = tuple(ProbeSpec(*row) for row in PROBE_ROWS)
# The probes that read the Python environment: run once per interpreter judged (`--python` repeated).
ENV_PROBES: tuple[str, ...] = tuple(p.name for p in DECLARED if p.per_env)


def in_profile(profile: str) -> tuple[str, ...]:
    """The names of the probes `profile` runs, in registry order."""
    return tuple(p.name for p in DECLARED if profile in p.profiles)


def derivations() -> list[Callable[[Facts], dict[str, Fact]]]:
    """The derive() of each probe module that has one, in registry order (gpudoctor/derive.py runs them
    first, each on the facts so far: a later one may read an earlier one's)."""
    return [importlib.import_module(f"{__name__}.{p.module}").derive for p in DECLARED if p.derives]


def registry(
    data_dir: Optional[str] = None, deep: bool = False, since: Optional[float] = None
) -> list[tuple[str, tuple[str, ...], Probe]]:
    """(name, owned prefixes, probe). Imported lazily so `gpudoctor --help` stays fast. `data_dir` is the
    directory `check --data-dir` names, for the storage probe. `deep` (`check --deep`) adds the runtime
    probe: child processes that load libcuda and import each framework (gpudoctor/probes/runtime.py).
    `since` (`check --since`, seconds) is the window of kernel-log events judged; None: since boot.

    A probe that runs with --deep alone is imported when it runs, so that a check without --deep, which
    lists it to skip its rules, never imports it; every other probe's module is imported here, in this
    thread: fifteen threads importing their modules at once cost a check 4 ms more CPU than that."""
    options: dict[str, Any] = {"data_dir": data_dir, "since": since}
    probes: list[tuple[str, tuple[str, ...], Probe]] = []
    for spec in DECLARED:
        if spec.deep and not deep:
            continue
        chosen = {o: options[o] for o in spec.options}
        if spec.deep:
            fn: Probe = functools.partial(_run, spec.module, chosen)
        else:
            fn = importlib.import_module(f"{__name__}.{spec.module}").probe
            fn = functools.partial(fn, **chosen) if chosen else fn
        probes.append((spec.name, spec.heads, fn))
    return probes


def _run(module: str, options: dict[str, Any], host: Any) -> dict[str, Fact]:
    """The probe of gpudoctor/probes/<module>.py, run on `host` with its options."""
    return importlib.import_module(f"{__name__}.{module}").probe(host, **options)
