"""``bot.dataclass_code``: gpubot's generated dataclass methods compiled once, kept beside the bytecode."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from bot import dataclass_code
from tests.interpreter import run_json

SOURCE = '''
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Card:
    uuid: str
    memory_mib: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
'''


def _module(name: str, folder: Path) -> types.ModuleType:
    """Import ``SOURCE`` as module ``name`` from a file in ``folder`` (so it has a cache path)."""
    path = folder / "cards.py"
    path.write_text(SOURCE, encoding="utf-8")
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        exec(compile(SOURCE, str(path), "exec"), module.__dict__)  # noqa: S102 - the test's own module
    finally:
        del sys.modules[name]
    return module


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The module's per-process state, empty, with writing allowed."""
    modules: dict[str, Any] = {}
    monkeypatch.setattr(dataclass_code, "_modules", modules)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    dataclass_code.install()
    return modules


def _cache_file(folder: Path) -> Path:
    return Path(importlib.util.cache_from_source(str(folder / "cards.py")).removesuffix(".pyc") + ".dataclasses")


def test_a_second_process_takes_the_code_from_the_file(tmp_path: Path, fresh: dict[str, Any]) -> None:
    first = _module("bot.fake_cards", tmp_path)
    record = fresh["bot.fake_cards"]
    assert record.missed and len(record.used) >= 5  # __init__, __repr__, __eq__, __hash__, __setattr__…
    dataclass_code._save()
    assert _cache_file(tmp_path).is_file()

    fresh.clear()  # what a new process starts with
    second = _module("bot.fake_cards", tmp_path)
    again = fresh["bot.fake_cards"]
    assert not again.missed and set(again.used) == set(record.used)
    # the class made from kept code behaves as one compiled from its text
    a, b = second.Card("GPU-1", 80), second.Card("GPU-1", 80)
    assert a == b and hash(a) == hash(b) and repr(a) == repr(first.Card("GPU-1", 80))
    assert repr(a) == "Card(uuid='GPU-1', memory_mib=80, tags=())"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.uuid = "GPU-2"  # type: ignore[misc]


def test_a_damaged_or_foreign_file_is_ignored_and_rewritten(tmp_path: Path, fresh: dict[str, Any]) -> None:
    cache = _cache_file(tmp_path)
    cache.parent.mkdir(parents=True)
    for content in (b"not marshal at all", b"\x00\x00\x00\x00" + b"x" * 40,
                    importlib.util.MAGIC_NUMBER + b"\xff\xfe garbage"):
        cache.write_bytes(content)
        fresh.clear()
        card = _module("bot.fake_cards", tmp_path).Card("GPU-1")
        assert card.uuid == "GPU-1" and fresh["bot.fake_cards"].missed
    dataclass_code._save()
    assert cache.read_bytes().startswith(importlib.util.MAGIC_NUMBER)
    assert dataclass_code._read(str(cache)).keys() == fresh["bot.fake_cards"].used.keys()


def test_other_modules_and_dont_write_bytecode_leave_no_file(
    tmp_path: Path, fresh: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _module("tests.fake_cards", tmp_path)  # not gpubot's: compiled as dataclasses always did
    assert fresh == {}
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _module("bot.fake_cards", tmp_path)
    dataclass_code._save()
    assert not _cache_file(tmp_path).exists()


def test_after_compile_all_a_command_compiles_nothing() -> None:
    """End to end, two interpreters, as test.sh and bench.sh run them: ``compile_all`` writes
    every module's file (even under PYTHONDONTWRITEBYTECODE, like compileall), and a process
    importing what a diagnosis imports then compiles none of their generated methods."""
    compile_all = "import json\nfrom bot.dataclass_code import compile_all\nprint(json.dumps(compile_all()))\n"
    command = (
        "import json, bot, bot.engine.runner, bot.console.output, bot.oneshot\n"
        "from bot import dataclass_code as d\n"
        "print(json.dumps([len(d._modules), sorted(n for n, m in d._modules.items() if m.missed)]))\n"
    )
    assert run_json(compile_all) > 100
    modules, missed = run_json(command)
    assert modules > 30 and missed == []


def test_release_writes_what_is_new_and_forgets_the_texts(tmp_path: Path, fresh: dict[str, Any]) -> None:
    _module("bot.fake_cards", tmp_path)
    assert fresh["bot.fake_cards"].used
    dataclass_code.release()
    assert fresh == {} and _cache_file(tmp_path).is_file()
    _module("bot.fake_cards", tmp_path)  # imported after: its own record, from the file
    assert not fresh["bot.fake_cards"].missed
