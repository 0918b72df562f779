"""Every ``expect`` block of every scenario in the repo, run through the CLI with --scenario --json
and ``--node-access agent``; test_expect_readers runs the same blocks with the node reads over SSH
(the CLI's direct reader and the watch cache, one simulator per file) and applies the same checks
(report_checks.py), so both transports must reach the same findings.

The scenario files are the data; this test only reads them. A listed code must appear, an
absent one must not, and the JSON must follow the CLI contract.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from bot.cli import main
from bot.sim.scenario import Expectation, load_scenario
from tests.exit_status import assert_answered
from tests.scenarios.report_checks import assert_expected, assert_report_contract

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
CASES = [
    pytest.param(path, i, exp, id=f"{path.stem}:{exp.run.split()[0]}:{i}")
    for path in SCENARIOS
    for i, exp in enumerate(load_scenario(path).expect)
]


def test_scenarios_exist() -> None:
    assert len(SCENARIOS) >= 5
    assert len(CASES) >= 5


@pytest.mark.parametrize(("path", "index", "exp"), CASES)
def test_expect_block(path: Path, index: int, exp: Expectation, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI, the node reads going through the agent (test_expect_readers runs the same
    expectations over SSH, through both readers, on one simulator per file, with the same checks)."""
    argv = shlex.split(exp.run) + ["--scenario", str(path), "--json", "--node-access", "agent"]
    code = main(argv)
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert_answered(code, report)
    assert_report_contract(report)
    assert_expected(path, exp, report)


def test_every_scenario_names_its_root_cause() -> None:
    """Judged as the user reads it: each expectation says which finding must come first."""
    missing = [f"{p.name}: {e.run}" for p in SCENARIOS for e in load_scenario(p).expect if not e.first]
    assert not missing, missing
