"""The validated runbook set kept between processes (bot/engine/runbook_cache.py, on bot/kept.py):
same set, and any change to a runbook file or to gpubot's code is a miss."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import kept as kept_module
from bot.engine import runbook_cache, runbook_dir
from tests.unit.kept_files import private

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache file, writes allowed, and no set validated in this process yet."""
    path = private(runbook_cache.KEPT, tmp_path / "runbooks.pickle", monkeypatch)
    monkeypatch.setattr(runbook_dir, "_VALIDATED", {})
    yield path


def overrides(tmp_path: Path, text: str = "") -> Path:
    """An override directory whose one file replaces the built-in why-pending runbook."""
    root = tmp_path / "overrides"
    root.mkdir(exist_ok=True)
    shutil.copy(runbook_dir.builtin_runbook_dir() / "why-pending.yaml", root / "why-pending.yaml")
    if text:
        with (root / "why-pending.yaml").open("a", encoding="utf-8") as f:
            f.write(text)
    return root


def test_a_later_process_gets_the_same_set_without_reading_the_files(
    kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = overrides(tmp_path)
    first, problems = runbook_dir.check_with_overrides(root, None)
    assert problems == [] and kept.is_file()
    monkeypatch.setattr(runbook_dir, "_VALIDATED", {})  # a new process
    monkeypatch.setattr(runbook_dir, "_read_and_assemble", lambda *a: pytest.fail("the files were read again"))
    again, problems = runbook_dir.check_with_overrides(root, None)
    assert problems == [] and again == first


def test_a_changed_runbook_file_is_read_again(kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = overrides(tmp_path)
    runbook_dir.check_with_overrides(root, None)
    monkeypatch.setattr(runbook_dir, "_VALIDATED", {})
    overrides(tmp_path, "\nnot_a_key: 1\n")  # same name, new size and mtime
    _, problems = runbook_dir.check_with_overrides(root, None)
    assert any("not_a_key" in p for p in problems), problems


def test_changed_code_is_a_miss(kept: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = overrides(tmp_path)
    rs, problems = runbook_dir.check_with_overrides(root, None)
    key = runbook_dir._set_key(sorted(root.iterdir()), str(root))
    runbook_cache.save(key, rs, problems)
    assert runbook_cache.load(key) is not None
    stamp = kept_module.code_stamp()
    monkeypatch.setattr(kept_module, "code_stamp", lambda: (*stamp, ("bot/new_check.py", 1, 1)))
    assert runbook_cache.load(key) is None


@pytest.mark.parametrize("content", [b"", b"garbage", runbook_cache.KEPT.magic + b"\x80\x05not a pickle"])
def test_a_damaged_file_is_a_miss(kept: Path, content: bytes) -> None:
    kept.write_bytes(content)
    assert runbook_cache.load(("x", ())) is None


def test_nothing_is_written_where_bytecode_would_not_be_unless_asked(
    kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    runbook_cache.save(("x", ()), None, [])
    assert not kept.exists()
    runbook_cache.save(("x", ()), None, [], always=True)
    assert runbook_cache.load(("x", ())) == (None, [])


def test_the_bot_imports_the_checks_at_start_not_in_its_first_answer() -> None:
    """With the runbooks from the cache nothing imports the check modules before a diagnosis; the
    long-running bot's start does, so its first answer does not stall the loop that acks Slack."""
    script = (
        "import asyncio, sys\n"
        "from bot.service import Service\n"
        "from bot.settings import load_settings\n"
        "service = Service(load_settings(env={}))\n"
        "before = 'bot.engine.checks.sched_events' in sys.modules\n"
        "service.clients.for_cluster = lambda name: None  # no cluster here: only what start warms\n"
        "asyncio.run(service.start())\n"
        "print(before, 'bot.engine.checks.sched_events' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "True", proc.stdout


def test_each_runbook_directory_has_its_own_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process with an override directory must not replace the built-in set the others read
    (seen: a worker validating its overrides between bot.precompile and the next command)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(runbook_cache.KEPT, "module_file", str(tmp_path / "runbook_dir.py"))
    builtin, override = ("/opt/runbooks", ()), ("/etc/gpubot/runbooks", ())
    runbook_cache.save(builtin, "built-in", [])
    runbook_cache.save(override, "overrides", [])
    assert runbook_cache.load(builtin) == ("built-in", []) and runbook_cache.load(override) == ("overrides", [])


def test_no_more_than_eight_directories_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(runbook_cache.KEPT, "module_file", str(tmp_path / "runbook_dir.py"))
    for n in range(12):
        runbook_cache.save((f"/tmp/runbooks-{n}", ()), n, [])
    assert len(list((tmp_path / "__pycache__").glob("runbook_dir.*.runbooks"))) == 8
    assert runbook_cache.load(("/tmp/runbooks-11", ())) == (11, [])

