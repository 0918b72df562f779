"""A private file for a ``bot.kept.KeptFile`` in a test: its reads and writes go to ``path``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.kept import KeptFile


def private(kept: KeptFile, path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``kept`` keeps to ``path`` whatever the part, with writes allowed (as where Python writes bytecode)."""
    monkeypatch.setattr(kept, "path", lambda part="": str(path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return path
