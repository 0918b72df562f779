"""Rewrite tests/slow_files.yaml from a pytest run's ``--durations=0`` report.

    python -m pytest -q -n 4 --dist loadfile --durations=0 -m "not exclusive" > /tmp/durations.txt
    python scripts/slow_files.py /tmp/durations.txt

The file orders the test files handed to parallel workers (tests/conftest.py), longest first.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "slow_files.yaml"
#: files faster than this keep their collection order
FLOOR_S = 5.0
LINE = re.compile(r"([\d.]+)s (?:call|setup|teardown)\s+(\S+?)::")


def per_file(report: str) -> Counter[str]:
    seconds: Counter[str] = Counter()
    for line in report.splitlines():
        if m := LINE.match(line):
            seconds[m.group(2)] += float(m.group(1))
    return seconds


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    seconds = per_file(Path(argv[0]).read_text(encoding="utf-8"))
    if not seconds:
        print(f"no --durations=0 lines in {argv[0]}", file=sys.stderr)
        return 1
    head = [line for line in OUT.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    body = [f"{name}: {s:.0f}" for name, s in seconds.most_common() if s >= FLOOR_S]
    OUT.write_text("\n".join(head + body) + "\n", encoding="utf-8")
    print(f"{len(body)} files written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
