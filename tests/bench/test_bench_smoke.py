"""The benchmark suite runs end to end: every benchmark on a toy cluster, and the report renders.

Measures nothing (no timing is asserted): it only keeps ``./scripts/bench.sh`` working as the
code it drives changes, so a full run on a quiet machine does not fail at minute ten.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.common import ROOT


def test_every_benchmark_runs_at_a_tiny_size_and_the_report_has_every_section(tmp_path: Path) -> None:
    out = tmp_path / "LATEST.md"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run_all", "--tiny", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    for section in (
        "## Targets",
        "## Object sizes",
        "## why-pending",
        "## node-status",
        "## Slack ack",
        "## Proactive sweep",
        "## pending -A",
        "## Commands that read no cluster",
        "## Raw results",
    ):
        assert section in text
    assert "necessary-reads floor" in text and "via ssh" in text and "via agent" in text
    # every target of issue 34 has a verdict line, measured or said not to be (a tiny run measures none)
    for target in ("kubectl minimal at 200 nodes", "imports-only process", "10,000 nodes / 200,000 pods",
                   "warm RSS ≤ 180 MB", "time to warm", "Slack ack p99", "≤ 1.2× its bound via agent",
                   "≤ 1.0× its bound via ssh", "pending -A", "scaling"):
        assert target in text, target
    assert "### Scaling" in text and "per 10k pods" in text and "**Download all / time to warm**" in text
    assert "**CPU of the cold CLI**" in text and "system " in text
