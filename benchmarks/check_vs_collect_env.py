"""Times `gpudoctor check` (and `check --deep`) against `python -m torch.utils.collect_env` in one run.

    python benchmarks/check_vs_collect_env.py [--python INTERPRETER_WITH_TORCH] [--runs 7]

Run it with an interpreter that has gpudoctor installed; --python names the environment holding torch
(default: the same one), which gpudoctor inspects from outside as users run it. Budgets (DESIGN): check at
most 0.06 of collect_env (issue 24's goal: 0.05); `check --deep` no slower than collect_env; --help at most
1.5x --version. This is a benchmark, not a test: it prints, never fails. Figures: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys

from timing import gpudoctor, medians


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable, help="interpreter whose environment holds torch")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    gd = gpudoctor()
    commands = {
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
    print(f"--help / --version: {m['gpudoctor --help'] / m['gpudoctor --version']:.2f} (target at most 1.5)")


if __name__ == "__main__":
    main()
