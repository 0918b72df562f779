"""Results kept beside the bytecode (bot/kept.py): the doctor's scan of the client calls is read,
not redone, by a later process, and redone when any gpubot module changes; after precompile, a
command reads neither the runbook files nor the modules' sources (bot/engine/runbook_cache.py has
the runbook set's own tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot import kept as kept_module
from bot.doctor import needs as needs_module
from bot.doctor.kube_calls import Perm, Use
from bot.kept import KeptFile
from tests.unit.kept_files import private

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scan_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private file for the doctor's scan, writes allowed, nothing scanned in this process yet."""
    path = private(needs_module._KEPT, tmp_path / "needs.scan", monkeypatch)
    needs_module.scanned.cache_clear()
    yield path
    needs_module.scanned.cache_clear()


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each scan of the modules, counted; the scan itself is a small fixed answer (the scanner
    has its own tests in tests/deploy/test_rbac.py, and the real one takes 1.6 s)."""
    done: list[int] = []
    found = ((Use("bot/x.py", 1, "CoreV1Api", "list_node", frozenset({Perm("list", "", "nodes")})),), ())

    def scan() -> needs_module.Scan:
        done.append(1)
        return found

    monkeypatch.setattr(needs_module, "_scan", scan)
    return done


def test_a_later_process_reads_the_scan_instead_of_parsing_the_modules(scan_file: Path, scans: list[int]) -> None:
    first = needs_module.scanned()
    assert scan_file.is_file() and first[0] and len(scans) == 1
    needs_module.scanned.cache_clear()  # a new process
    assert needs_module.scanned() == first and len(scans) == 1


def test_a_changed_module_is_scanned_again(scan_file: Path, scans: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    needs_module.scanned()
    needs_module.scanned.cache_clear()
    stamp = kept_module.code_stamp()
    monkeypatch.setattr(kept_module, "code_stamp", lambda: (*stamp, (str(REPO / "bot/new_read.py"), 1, 1)))
    needs_module.scanned()
    assert len(scans) == 2


def test_another_client_version_is_a_miss(scan_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = needs_module._scan_key()
    needs_module._KEPT.save(key, ((), ()))
    assert needs_module._KEPT.load(key) == ((), ())
    assert needs_module._KEPT.load((key[0], key[1] + ".post1")) is None


@pytest.mark.parametrize("content", [b"", b"garbage", b"\x00" * 64])
def test_a_damaged_or_foreign_file_is_a_miss(tmp_path: Path, content: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = KeptFile(__file__, "test")
    path = private(kept, tmp_path / "f.test", monkeypatch)
    path.write_bytes(content)
    assert kept.load("k") is None
    path.write_bytes(kept.magic + b"\x80\x05not a pickle")
    assert kept.load("k") is None
    other = KeptFile(__file__, "test", version=2)  # a later format: its files are not read as this one's
    private(other, path, monkeypatch)
    other.save("k", 1)
    assert other.load("k") == 1 and kept.load("k") is None


def test_after_precompile_a_command_reads_no_runbook_and_doctor_parses_no_module() -> None:
    """End to end, two interpreters under PYTHONDONTWRITEBYTECODE, as test.sh and the image run them."""
    script = (
        "from bot.doctor import needs\n"
        "from bot.engine import runbook_dir\n"
        "runbook_dir.parse_yaml = None  # any read of a runbook file would fail\n"
        "needs.scan_tree = None  # and so would a scan of the modules\n"
        "print(sorted(runbook_dir.load_with_overrides(None).diagnoses))\n"
        "found = needs.needs()\n"
        "print(len(found.reads), len(found.state))\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for argv in (["-m", "bot.precompile"], ["-c", script]):
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=REPO, env=env,
                              timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
    diagnoses, counts = proc.stdout.splitlines()
    assert "why-pending" in diagnoses
    reads, state = map(int, counts.split())
    assert reads > 5 and state > 3, proc.stdout
