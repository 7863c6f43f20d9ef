"""Times `gpudoctor check` (and `check --deep`) against `python -m torch.utils.collect_env` in one run.

    python benchmarks/check_vs_collect_env.py [--python INTERPRETER] [--runs 7] [--compare GPUDOCTOR ...]

Run it with an interpreter that has gpudoctor installed; --python names the environment holding torch
(default: the same one), which gpudoctor inspects from outside as users run it. Budgets (DESIGN): check at
most 0.06 of collect_env (issue 24's goal: 0.05); `check --deep` no slower than collect_env; --help at most
1.5x --version. --compare names another install's `gpudoctor` script (repeatable; e.g. one of the main
branch in another virtual environment): its `check` is timed in the same interleaved runs, so that a before
and an after meet the same machine noise. This is a benchmark, not a test: it prints, never fails.
Figures: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys

from timing import gpudoctor, medians


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter whose environment holds torch")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--compare", action="append", default=[], help="another install's gpudoctor script")
    args = ap.parse_args()
    gd = gpudoctor()
    commands = {
        **{f"check ({other})": [other, "check", "--python", args.python] for other in args.compare},
        "gpudoctor --version": gd + ["--version"],
        "gpudoctor --help": gd + ["--help"],
        "gpudoctor check": gd + ["check", "--python", args.python],
        "gpudoctor check --format json": gd + ["check", "--format", "json", "--python", args.python],
        "gpudoctor check --deep": gd + ["check", "--deep", "--timeout", "60", "--python", args.python],
        "python -m torch.utils.collect_env": [args.python, "-m", "torch.utils.collect_env"],
        "python -c pass": [args.python, "-c", "pass"],
    }
    m = medians(commands, args.runs, f", python {args.python}")
    collect = m["python -m torch.utils.collect_env"]
    print(f"\nratio check / collect_env: {m['gpudoctor check'] / collect:.3f} (at most 0.06; goal 0.05)")
    print(f"ratio check --deep / collect_env: {m['gpudoctor check --deep'] / collect:.3f} (target at most 1)")
    for other in args.compare:
        print(f"ratio check ({other}) / collect_env: {m[f'check ({other})'] / collect:.3f}")
    print(f"--help / --version: {m['gpudoctor --help'] / m['gpudoctor --version']:.2f} (target at most 1.5)")


if __name__ == "__main__":
    main()
