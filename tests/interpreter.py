"""A fresh interpreter for a test that needs one (what a new gpubot process finds at start-up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def run_json(script: str, *, argv: tuple[str, ...] = ()) -> Any:
    """Run ``script`` (``python -c``; or ``argv`` instead, e.g. ``("-m", "bot.precompile")``) in a new
    interpreter from the repository, as the project's machines run it (PYTHONDONTWRITEBYTECODE set),
    and return the JSON of its last line of output (None where it printed nothing)."""
    proc = subprocess.run([sys.executable, *(argv or ("-c", script))], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    return json.loads(lines[-1]) if lines and script else None
