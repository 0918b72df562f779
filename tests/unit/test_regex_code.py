"""The kept regular expressions (bot/regex_code.py) build the same patterns ``re`` would."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import regex_code
from tests.interpreter import run_json

PATTERNS = [
    (r"(?P<node>[a-z0-9.-]+) didn't match (?P<what>.+?)(?:, |\.$)", 0),
    (r"^\s*GPU\s+(\d+):\s*(?:ERR!|[\d.]+)\s*$", re.MULTILINE | re.IGNORECASE),
    (rb"\x00(?P<k>[^=]+)=", 0),
    (r"(?x) \d+ (?# a verbose one)  [a-f]+", 0),
]


@pytest.fixture
def kept_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "regex.sre"
    monkeypatch.setattr(regex_code, "cache_path", lambda: str(path))
    monkeypatch.setattr(regex_code, "_kept", {})
    # as a process starts: not installed yet (this one installed the repository's file at import;
    # monkeypatch puts that back afterwards)
    monkeypatch.setattr(re._compiler, "compile", regex_code._original_compile)  # type: ignore[attr-defined]
    yield path
    re.purge()


def compile_them() -> None:
    for pattern, flags in PATTERNS:
        re.compile(pattern, flags)


def test_a_kept_pattern_is_the_pattern_re_builds(kept_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert regex_code.record_all(compile_them) == len(PATTERNS)
    expected = {(p, f): re.compile(p, f) for p, f in PATTERNS}
    regex_code.install()
    assert re._compiler.compile is regex_code._kept_compile  # type: ignore[attr-defined]
    re.purge()
    original = regex_code._original_compile
    # only the kept code may build these: compiling one from its text would fail the test
    monkeypatch.setattr(regex_code, "_original_compile", lambda p, flags=0: pytest.fail(f"compiled {p!r}"))
    for (pattern, flags), want in expected.items():
        got = re.compile(pattern, flags)
        assert got is not want  # built again, from the kept code
        assert (got.pattern, got.flags, got.groups, got.groupindex) == (
            want.pattern, want.flags, want.groups, want.groupindex)
    line = "gpu-1 didn't match Pod's node affinity/selector, "
    assert re.compile(PATTERNS[0][0]).match(line).groupdict() == {  # type: ignore[union-attr]
        "node": "gpu-1", "what": "Pod's node affinity/selector"}
    assert re.compile(PATTERNS[1][0], PATTERNS[1][1]).findall("gpu 0: 12\n  GPU 1: ERR!\n") == ["0", "1"]
    assert re.compile(PATTERNS[2][0]).findall(b"\x00a=1\x00bb=2") == [b"a", b"bb"]
    monkeypatch.setattr(regex_code, "_original_compile", original)


def test_a_pattern_not_kept_is_compiled_as_before(kept_file: Path) -> None:
    regex_code.record_all(compile_them)
    regex_code.install()
    assert re.compile(r"not (kept)+").match("not keptkept") is not None


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage", b"not our header at all"])
def test_a_foreign_or_damaged_file_is_ignored(kept_file: Path, content: bytes) -> None:
    kept_file.write_bytes(content)
    regex_code.install()
    assert regex_code._kept == {}
    assert re._compiler.compile is regex_code._original_compile  # type: ignore[attr-defined]


def test_another_interpreters_file_is_ignored(kept_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    regex_code.record_all(compile_them)
    monkeypatch.setattr(regex_code, "HEADER", regex_code.HEADER.replace(b"sre ", b"sre 0"))
    assert regex_code._read(str(kept_file)) == {}


def test_after_compile_all_a_diagnosis_compiles_almost_no_pattern() -> None:
    """End to end, two interpreters, as test.sh and bench.sh run them: ``bot.precompile`` keeps the
    patterns, and a process importing what a diagnosis imports then compiles almost none (those
    of modules imported before gpubot: argparse, the interpreter's start-up)."""
    command = (
        "import json, re._compiler as c\n"
        "misses = []\n"
        "original = c.compile\n"
        "c.compile = lambda p, flags=0: (misses.append(p), original(p, flags))[1]\n"
        "import bot, bot.engine.runner, bot.console.output, bot.oneshot, bot.probes.clients, bot.kube.scheduling\n"
        "from bot import regex_code\n"
        "print(json.dumps([len(regex_code._kept), len(misses)]))\n"
    )
    run_json("", argv=("-m", "bot.precompile"))
    kept, misses = run_json(command)
    assert kept > 150 and misses <= 5, (kept, misses)
