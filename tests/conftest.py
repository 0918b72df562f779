"""Fixtures shared across test packages."""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import settings as hypothesis_settings

from bot.sim.scenario import Scenario
from bot.sim.ssh_server import SshFleet

SLOW_FILES = Path(__file__).with_name("slow_files.yaml")

# CI runs the same examples every time (a failure there is reproducible, never a coin toss);
# locally hypothesis keeps exploring. Found failures are pinned with @example. No profile has a
# per-example deadline: it is a wall-clock assertion, and on a loaded machine it fails an example
# that is merely slow (DeadlineExceeded, then Flaky when the rerun is fast).
hypothesis_settings.register_profile("ci", derandomize=True, database=None, deadline=None)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "dev")

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment (execnet sets
# them); a serial run has neither. Every process a test starts inherits them, and a command on a
# pseudo-terminal of 150 columns then wraps at 80 (test_cli_terminal): the workers drop them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)

StartFleet = Callable[[Scenario], Awaitable[SshFleet]]


@pytest.fixture
async def start_fleet(tmp_path: Path) -> AsyncIterator[StartFleet]:
    """Start simulated SSH fleets on demand; every one is stopped at the end of the test."""
    fleets: list[SshFleet] = []

    async def start(scenario: Scenario) -> SshFleet:
        fleet = SshFleet(scenario, tmp_path / f"fleet{len(fleets)}")
        fleets.append(fleet)
        await fleet.start()
        return fleet

    yield start
    for fleet in fleets:
        await fleet.stop()


@pytest.fixture(autouse=True)
def strict_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that raises or emits an undeclared code fails the test instead of being skipped."""
    import bot.engine.runner

    monkeypatch.setenv("GPUBOT_STRICT_CHECKS", "true")
    monkeypatch.setattr(bot.engine.runner, "STRICT_EVERYWHERE", True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "exclusive: a wall-clock assertion (an answer within a deadline): with parallel workers "
        "the test runs while no ordinary test does, so another worker's load cannot fail it "
        "(scripts/test.sh runs them in a pass of their own, two at a time: each uses under half a core)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest files first (tests/slow_files.yaml), each file's tests kept together and in
    order. Parallel workers take whole files in this order (scripts/test.sh passes
    ``--no-loadscope-reorder``; xdist's own order, most tests first, put the long one-test files
    last, and one worker ran them while the others had nothing left)."""
    seconds = yaml.safe_load(SLOW_FILES.read_text(encoding="utf-8")) or {}
    weight = {item: float(seconds.get(item.nodeid.split("::", 1)[0], 0.0)) for item in items}
    items.sort(key=lambda item: -weight[item])  # stable: every other order is kept


@pytest.fixture(autouse=True)
def one_at_a_time_when_exclusive(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Under pytest-xdist every test holds a shared lock on one file of this run and an
    ``exclusive`` test holds it exclusively: it waits for the other workers' running tests and
    they start no new one until it ends. Without workers there is nothing to wait for; in a run
    of the exclusive tests alone they run beside each other.

    ``flock`` prefers no one: while an exclusive test waited, the other workers kept taking the
    shared lock between their tests and it waited minutes (228 s in one run with four workers).
    So an exclusive test first holds a gate that every test passes on its way in: the workers
    finish the test they are in and then queue behind it."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or request.config.getoption("markexpr") == "exclusive":
        # no workers, or a run of the exclusive tests only (scripts/test.sh's second pass): they
        # wait on deadlines more than they compute, and two of them at once stay under one core
        yield
        return
    # the run's temp root (pytest-N), above each worker's own basetemp (pytest-N/popen-gwK)
    root = tmp_path_factory.getbasetemp().parent
    exclusive = request.node.get_closest_marker("exclusive") is not None
    with open(root / "exclusive.gate", "a") as gate, open(root / "exclusive.lock", "a") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        if not exclusive:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield


@pytest.fixture(autouse=True)
def root_logger_restored() -> Iterator[None]:
    """A test that runs ``serve`` in-process gets its JSON log handler on the root logger at INFO
    (bot/observability.configure_logging); left there, every later in-process command in the same
    process logs asyncssh's INFO lines into its stderr. Serial runs hid it by file order (test_cli
    ran before test_cli_conventions); parallel workers run files in other orders. The handlers the
    test added (pytest's own capture handlers aside) go, and the root level is put back."""
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in before and type(handler).__module__ != "_pytest.logging":
            root.removeHandler(handler)
    root.setLevel(level)
