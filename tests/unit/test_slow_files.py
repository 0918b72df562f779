"""tests/slow_files.yaml names test files that exist (a renamed file would silently lose its place)."""

from __future__ import annotations

from pathlib import Path

import yaml

from scripts.slow_files import per_file
from tests.conftest import SLOW_FILES

ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_file_exists_and_has_seconds() -> None:
    seconds = yaml.safe_load(SLOW_FILES.read_text(encoding="utf-8"))
    assert seconds, "tests/slow_files.yaml is empty"
    for name, s in seconds.items():
        assert (ROOT / name).is_file(), f"{name} is in tests/slow_files.yaml but not in the tree"
        assert isinstance(s, int | float) and s > 0, name


def test_durations_are_summed_per_file() -> None:
    report = "\n".join([
        "12.50s call     tests/a/test_x.py::test_one[p]",
        "1.00s setup    tests/a/test_x.py::test_one[p]",
        "3.00s call     tests/b/test_y.py::test_two",
        "(2 durations < 0.005s hidden)",
    ])
    assert per_file(report) == {"tests/a/test_x.py": 13.5, "tests/b/test_y.py": 3.0}
