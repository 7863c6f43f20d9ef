"""Times the container pre-flight with the framework probe against the pre-flight without it.

    python benchmarks/preflight_bench.py [--python INTERPRETER_WITH_FRAMEWORKS] [--runs 9]

`check --profile preflight` reads the image's Python environment (metadata only: one child process of that
interpreter) and evaluates the framework rules; `--no-python` is the pre-flight as it was before, the
machine alone. Run it with an interpreter that has gpudoctor installed; --python names the environment to
judge (default: python3 on PATH, as an entrypoint would). A benchmark, not a test: it prints, never fails.
"""

from __future__ import annotations

import argparse

from timing import gpudoctor, medians


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=None, help="interpreter whose environment to judge")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    gd = gpudoctor()
    target = ["--python", args.python] if args.python else []
    commands = {
        "preflight (machine and frameworks)": gd + ["check", "--profile", "preflight", *target],
        "preflight --no-python (as before)": gd + ["check", "--profile", "preflight", "--no-python"],
        "python3 -c pass": [args.python or "python3", "-c", "pass"],
    }
    m = medians(commands, args.runs)
    with_fw, without = m["preflight (machine and frameworks)"], m["preflight --no-python (as before)"]
    print(f"\nthe framework probe adds {with_fw - without:+.3f} s ({with_fw / without:.2f}x)")


if __name__ == "__main__":
    main()
