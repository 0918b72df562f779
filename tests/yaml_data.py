"""YAML test data read with libyaml: ``yaml.safe_load`` is PyYAML's pure-Python loader.

The tests read scenarios, corpora and captures that run to thousands of lines, some of them for
every test of a module: with the pure-Python loader that was 15 s of a test run (one scenario
glob alone, 8 s). Same documents, same values; the C loader where PyYAML was built with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.yamlio.convert import fast_safe_loader


def load(text: str) -> Any:
    """One YAML document, as ``yaml.safe_load`` reads it."""
    return yaml.load(text, Loader=fast_safe_loader())  # noqa: S506 - a safe loader, the C one


def load_file(path: Path) -> Any:
    """The YAML document in ``path`` (UTF-8)."""
    return load(path.read_text(encoding="utf-8"))
