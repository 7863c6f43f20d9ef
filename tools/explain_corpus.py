"""The explain corpus's score, per file and in all, with the messages explain gets wrong.

    python tools/explain_corpus.py            the scores and every miss
    python tools/explain_corpus.py --quiet    the scores only

The corpus and its scoring are in tests/explain/ (corpus/README.md says what is in it and how it was
gathered).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "explain"))

from corpus_score import load, score  # noqa: E402

from gpudoctor.explain.index import build  # noqa: E402


def main(argv: list[str]) -> int:
    matcher = build()[0]
    cases = load()
    for name in sorted({c["file"] for c in cases}):
        print(score(matcher, [c for c in cases if c["file"] == name]).line(name))
    total = score(matcher, cases)
    print(total.line("all"))
    if "--quiet" not in argv:
        for case, ids in total.wrong:
            want = case["expect"] or f"nothing (needs {case.get('needs')})"
            print(
                f"\n- {case['message'][:160]!r}\n"
                f"  expected {want}, got {ids or 'nothing'}  [{case['source']}]"
            )
        for message, first in total.blamed:
            print(f"\nBLAMED {first}: {message[:160]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
