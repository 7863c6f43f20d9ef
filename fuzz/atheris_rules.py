"""Coverage-guided fuzzing of rule files with atheris (libFuzzer for Python). Not run by CI.

    pip install atheris                                   # into the project's virtual environment
    python fuzz/atheris_rules.py -max_total_time=600      # seeds: rules/*.yaml; or name corpus dirs
    python fuzz/atheris_rules.py crash-<hash>             # replay one input that crashed

Property: for any bytes, the loader gives rules or loader Problems (file, line, reason), and rules that
load evaluate over the H200 fixture's facts without an exception. Anything else is a crash; libFuzzer
saves the input as crash-<hash> in the working directory. The hypothesis tests in tests/fuzz state the
same properties with generated inputs; this harness searches by coverage instead, and finds inputs no
strategy there describes.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

with atheris.instrument_imports():
    from gpudoctor.collect import collect
    from gpudoctor.engine.evaluate import evaluate
    from gpudoctor.engine.loader import Problem, parse_rules
    from gpudoctor.host.base import Deadline
    from gpudoctor.host.snapshot import SnapshotHost, load

FACTS, _ = collect(SnapshotHost(load(str(ROOT / "tests/fixtures/h200-driver580-snapshot"))), Deadline(30))


def test_one_input(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # load_file reports undecodable files before parsing: nothing of ours to reach
    rules, problems = parse_rules(text, "fuzz.yaml")
    assert all(isinstance(p, Problem) and p.message for p in problems)
    for result in evaluate(rules, FACTS):
        for finding in result.findings:
            assert isinstance(finding.message, str)


def main() -> None:
    args = list(sys.argv)
    if not any(Path(a).is_dir() for a in args[1:] if not a.startswith("-")) and not any(
        Path(a).is_file() for a in args[1:] if not a.startswith("-")
    ):
        seeds = Path(tempfile.mkdtemp(prefix="gpudoctor-rules-corpus-"))
        for f in sorted((ROOT / "rules").glob("*.yaml")):
            shutil.copy(f, seeds / f.name)
        args.append(str(seeds))
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
