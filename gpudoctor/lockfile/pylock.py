"""pylock.toml (PEP 751), as `uv export --format pylock.toml` and `pip lock` write it.

One [[packages]] table per distribution, each with its own `marker` (evaluated for the target), `index`
and wheels. PEP 751 makes the dependency edges optional (`dependencies`) and uv writes none: a torch pin
then gets the lock's nvidia-* pins as its requirements (model.finish says why).
"""

from __future__ import annotations

from .model import Lock, LockError, Pin, entry_of, finish, load_toml, normalise, tables, text_of, with_variant
from .target import Target, marker_holds, wheel_misfit

FORMAT = "pylock.toml"


def parse(text: str, path: str, t: Target) -> Lock:
    data = load_toml(text, path)
    if "lock-version" not in data:
        raise LockError(f"{path}: not a pylock.toml (no lock-version)")
    major = str(data.get("lock-version")).split(".")[0]
    if major != "1":
        raise LockError(f"{path}: lock-version {data.get('lock-version')} (gpudoctor reads 1.x)")
    packages = tables(data, "packages", path)
    skipped: list = []
    applied = []  # (pin, dependency tables)
    for number, pkg in enumerate(packages, 1):
        name, version, where, lacks = entry_of(pkg, "packages", number)
        if lacks:
            skipped.append(f"{where}: no {lacks} (a directory or VCS entry)")
            continue
        try:
            holds = marker_holds(text_of(pkg.get("marker")), t)
        except LockError as e:
            skipped.append(f"{where}: {e.reason}")
            continue
        if not holds:
            skipped.append(
                f"{where}: its marker ({pkg.get('marker')}) does not hold on {t.platform} {t.machine}"
            )
            continue
        misfit = _no_wheel_fits(pkg, t)
        if misfit:
            skipped.append(f"{where}: {misfit}")
            continue
        index = text_of(pkg.get("index"))
        deps = pkg.get("dependencies") if isinstance(pkg.get("dependencies"), list) else []
        applied.append((Pin(name, with_variant(name, version, index), index, []), deps))
    versions = {pin.name: pin.version for pin, _ in applied}
    pins = []
    for pin, deps in applied:
        names = [normalise(text_of(d.get("name"))) for d in deps if isinstance(d, dict)]
        pins.append(pin._replace(requires=sorted(f"{n}=={versions[n]}" for n in names if n in versions)))
    return finish(path, FORMAT, text_of(data.get("requires-python")), pins, skipped)


def _no_wheel_fits(pkg: dict, t: Target) -> str:
    """Why none of a package's wheels installs on the target ("" when one does, or it has an sdist or no
    wheel list)."""
    wheels = pkg.get("wheels")
    if not isinstance(wheels, list) or not wheels or pkg.get("sdist"):
        return ""
    reasons = []
    for wheel in wheels:
        if not isinstance(wheel, dict):
            continue
        filename = text_of(wheel.get("name")) or text_of(wheel.get("url")).rsplit("/", 1)[-1]
        misfit = wheel_misfit(filename.replace("%2B", "+"), t)
        if misfit is None:
            return ""
        reasons.append(misfit)
    return reasons[0] if len(reasons) == 1 else f"none of its {len(reasons)} wheels is for this target"
