"""The click flow on a real SQLite file: who may click, once only, expiry, precondition, audit, restart."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.errors import ActionError, StateStoreError
from bot.remediation.audit import format_audit
from bot.remediation.flow import ClickOutcome, ConfirmFlow, RunOutcome, StepResult
from bot.remediation.journal import RunJournal
from bot.remediation.policy import ApproverPolicy
from bot.state.ids import new_action_id
from bot.state.opening import open_sqlite
from bot.state.records import PendingAction
from bot.state.sqlite_actions import SqlitePendingStore
from bot.state.sqlite_audit import SqliteAuditLog

T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
APPROVERS = {"*": ("U0SRE", "U0OTHER", "S0ONCALL"), "namespace.label": ()}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Action:
    """Stands in for a bot.actions entry: records how often its precondition and run were called."""

    def __init__(
        self,
        *,
        holds: bool = True,
        why: str = "allocation on GPU 0 is still a zombie",
        outcome: RunOutcome | None = None,
        raises: BaseException | None = None,
        gate: asyncio.Event | None = None,
    ) -> None:
        self.holds, self.why, self.raises, self.gate = holds, why, raises, gate
        self.outcome = outcome or RunOutcome(
            True,
            "kubelet restarted; node gpu-1 Ready",
            [StepResult(f"ok: {s}", "ok") for s in ("cordon gpu-1", "restart kubelet", "uncordon gpu-1")],
        )
        self.checks = 0
        self.runs: list[PendingAction] = []

    async def precondition(self, record: PendingAction) -> tuple[bool, str]:
        self.checks += 1
        return self.holds, self.why

    async def run(self, record: PendingAction, journal: RunJournal) -> RunOutcome:
        self.runs.append(record)
        if self.gate is not None:
            await self.gate.wait()
        if self.raises is not None:
            raise self.raises
        return self.outcome


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "gpubot.db"


@pytest.fixture
def parts(db_path: Path, clock: Clock) -> Iterator[tuple[SqlitePendingStore, SqliteAuditLog]]:
    store, audit = open_sqlite(db_path, clock=clock).actions()
    yield store, audit
    store.db.close()


def make_flow(
    store: SqlitePendingStore, audit: SqliteAuditLog, clock: Clock, *, two_person: bool = True
) -> ConfirmFlow:
    return ConfirmFlow(
        store, audit, ApproverPolicy(APPROVERS, two_person_rule=two_person), clock=clock, ttl_s=900
    )


@pytest.fixture
def flow(parts: tuple[SqlitePendingStore, SqliteAuditLog], clock: Clock) -> ConfirmFlow:
    return make_flow(*parts, clock)


def offer(
    flow: ConfirmFlow, action: str = "kubelet.restart", requested_by: str = "U0REQUEST"
) -> PendingAction:
    return flow.offer(action, {"node": "gpu-1"}, "prod", requested_by, "C0CHAN", "KUBELET_CHECKPOINT_ZOMBIE")


async def click(
    flow: ConfirmFlow, action_id: str, user: str, act: Action, groups: tuple[str, ...] = ()
) -> ClickOutcome:
    return await flow.on_click(action_id, user, groups, precondition=act.precondition, run=act.run)


def events(flow: ConfirmFlow, action_id: str) -> list[tuple[str, str, str]]:
    return [(e.event, e.actor, e.outcome) for e in flow.audit.query(action_id=action_id)]


# -- offering ---------------------------------------------------------------------------------


def test_offer_creates_an_audited_pending_record(flow: ConfirmFlow) -> None:
    record = offer(flow)
    assert record.state == "pending" and len(record.id) == 32
    assert record.expires_at == T0 + timedelta(seconds=900)
    assert flow.store.get(record.id) == record
    [entry] = flow.audit.query(action_id=record.id)
    assert (entry.event, entry.actor, entry.target, entry.cluster) == (
        "offer",
        "U0REQUEST",
        "node/gpu-1",
        "prod",
    )
    assert (
        entry.detail["params"] == {"node": "gpu-1"} and entry.detail["finding"] == "KUBELET_CHECKPOINT_ZOMBIE"
    )
    assert offer(flow).id != record.id


# -- the happy path ---------------------------------------------------------------------------


async def test_approved_click_runs_once_and_audits_every_step(flow: ConfirmFlow, clock: Clock) -> None:
    record = offer(flow)
    act = Action()
    clock.advance(30)
    result = await click(flow, record.id, "U0SRE", act)
    assert result.status == "succeeded" and result.executed and result.updates_offer
    assert result.message == (
        "kubelet.restart on node/gpu-1 succeeded (approved by U0SRE): kubelet restarted; node gpu-1 Ready"
    )
    assert result.steps == ("ok: cordon gpu-1", "ok: restart kubelet", "ok: uncordon gpu-1")
    assert act.checks == 1 and len(act.runs) == 1 and act.runs[0].state == "running"
    final = flow.store.get(record.id)
    assert final is not None and final.state == "succeeded" and final.approved_by == "U0SRE"
    assert final.result_summary == "kubelet restarted; node gpu-1 Ready" and final.finished_at == clock.now
    assert events(flow, record.id) == [
        ("offer", "U0REQUEST", "offered"),
        ("approve", "U0SRE", "approved"),
        ("start", "U0SRE", "started"),
        ("step", "gpubot", "ok"),
        ("step", "gpubot", "ok"),
        ("step", "gpubot", "ok"),
        ("result", "gpubot", "ok"),
    ]
    steps = [e.detail["step"] for e in flow.audit.query(action_id=record.id) if e.event == "step"]
    assert steps == list(result.steps)


async def test_approver_through_a_user_group(flow: ConfirmFlow) -> None:
    record = offer(flow)
    result = await click(flow, record.id, "U0NEWHIRE", Action(), groups=("S0ONCALL",))
    assert result.status == "succeeded"


async def test_a_second_click_after_the_run_does_nothing(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action()
    assert (await click(flow, record.id, "U0SRE", act)).status == "succeeded"
    again = await click(flow, record.id, "U0OTHER", act)  # a Slack retry, or a colleague late
    assert again.status == "already_taken" and not again.updates_offer
    assert "already succeeded" in again.message
    assert len(act.runs) == 1 and act.checks == 1
    last = flow.audit.query(action_id=record.id)[-1]
    assert (last.event, last.actor, last.detail["reason"]) == ("refuse", "U0OTHER", "already running/done")


# -- once, under concurrency ------------------------------------------------------------------


async def _wait_until_done(tasks: list[asyncio.Task[ClickOutcome]], count: int, timeout: float = 20) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while sum(t.done() for t in tasks) < count:
        remaining = deadline - loop.time()
        assert remaining > 0, "clicks did not finish in time"
        await asyncio.wait(
            [t for t in tasks if not t.done()], timeout=remaining, return_when="FIRST_COMPLETED"
        )


async def test_simultaneous_clicks_run_once(flow: ConfirmFlow) -> None:
    record = offer(flow)
    gate = asyncio.Event()
    act = Action(gate=gate)
    tasks = [asyncio.create_task(click(flow, record.id, user, act)) for user in ["U0SRE", "U0OTHER"] * 5]
    # the winner is held inside run() until every other click has been answered
    await _wait_until_done(tasks, 9)
    assert flow.store.get(record.id).state == "running"  # type: ignore[union-attr]
    gate.set()
    results = await asyncio.gather(*tasks)
    assert sorted(r.status for r in results) == ["already_taken"] * 9 + ["succeeded"]
    assert len(act.runs) == 1 and act.checks == 1
    refusals = [e for e in flow.audit.query(action_id=record.id) if e.event == "refuse"]
    assert len(refusals) == 9 and {e.detail["reason"] for e in refusals} == {"already running/done"}


async def test_two_replicas_on_the_same_file_run_once(db_path: Path, clock: Clock) -> None:
    replicas = [open_sqlite(db_path).actions(), open_sqlite(db_path).actions()]
    try:
        flows = [make_flow(store, audit, clock) for store, audit in replicas]
        record = offer(flows[0])
        gate = asyncio.Event()
        acts = [Action(gate=gate), Action(gate=gate)]
        tasks = [asyncio.create_task(click(flows[i % 2], record.id, "U0SRE", acts[i % 2])) for i in range(8)]
        await _wait_until_done(tasks, 7)
        gate.set()
        results = await asyncio.gather(*tasks)
        assert sorted(r.status for r in results) == ["already_taken"] * 7 + ["succeeded"]
        assert sum(len(a.runs) for a in acts) == 1
    finally:
        for store, _ in replicas:
            store.db.close()


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "forged",
    [new_action_id(), "not-an-id", "", "x" * 5000, "'; DROP TABLE pending_actions; --", "\x00\n\x1b[31m"],
    # fixed ids: a fresh random id in the test id differs between xdist workers, which then refuse to run
    ids=["fresh-unknown-id", "not-an-id", "empty", "5000-chars", "sql", "control-chars"],
)
async def test_unknown_or_forged_ids_are_refused_and_audited(flow: ConfirmFlow, forged: str) -> None:
    act = Action()
    result = await click(flow, forged, "U0SRE", act)
    assert result.status == "unknown" and result.action is None and not result.updates_offer
    assert act.checks == 0 and act.runs == []
    [entry] = flow.audit.query()
    assert (entry.event, entry.actor, entry.outcome) == ("refuse", "U0SRE", "refused")
    assert entry.detail == {"reason": "unknown or forged id"}
    assert len(entry.action_id) <= 41 and entry.action_id.isprintable()


async def test_non_approvers_click_asks_the_approvers_and_the_offer_stays_open(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action()
    asked = await click(flow, record.id, "U0INTRUDER", act, groups=("S0RANDOM",))
    assert asked.status == "approval_requested" and not asked.updates_offer and not asked.executed
    assert asked.message == (
        "kubelet.restart on node/gpu-1 needs an approver: U0INTRUDER is not an approver for kubelet.restart."
    )
    assert asked.asked is not None and asked.asked.users == {"U0SRE", "U0OTHER"}
    assert asked.asked.groups == {"S0ONCALL"} and not asked.first_approval
    assert act.checks == 0 and act.runs == []
    assert flow.store.get(record.id).state == "pending"  # type: ignore[union-attr]
    last = flow.audit.query(action_id=record.id)[-1]
    assert (last.event, last.actor, last.outcome, last.detail["reason"]) == (
        "request",
        "U0INTRUDER",
        "requested",
        "U0INTRUDER is not an approver for kubelet.restart",
    )
    assert last.detail["asked"] == ["S0ONCALL", "U0OTHER", "U0SRE"]
    # nor can they deny it
    denied = await flow.on_deny(record.id, "U0INTRUDER", ())
    assert denied.status == "not_allowed" and flow.store.get(record.id).state == "pending"  # type: ignore[union-attr]
    # a real approver can still approve it
    assert (await click(flow, record.id, "U0SRE", act)).status == "succeeded"


async def test_action_with_no_approvers_is_refused(flow: ConfirmFlow) -> None:
    record = flow.offer("namespace.label", {"namespace": "ml"}, "prod", "U0REQUEST")
    result = await click(flow, record.id, "U0SRE", Action())
    assert result.status == "not_allowed" and "no approvers configured for namespace.label" in result.message


async def test_two_person_rule_makes_the_requesters_click_a_first_approval(flow: ConfirmFlow) -> None:
    record = offer(flow, requested_by="U0SRE")
    act = Action()
    first = await click(flow, record.id, "U0SRE", act)
    assert first.status == "approval_requested" and first.first_approval
    assert "needs a second approver" in first.message and "two-person rule" in first.message
    assert act.runs == [] and flow.store.get(record.id).state == "pending"  # type: ignore[union-attr]
    assert (await click(flow, record.id, "U0OTHER", act)).status == "succeeded"


async def test_an_approver_denies_and_the_offer_never_runs(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action()
    denied = await flow.on_deny(record.id, "U0SRE", ())
    assert denied.status == "denied" and denied.updates_offer and not denied.executed
    assert flow.store.get(record.id).state == "refused"  # type: ignore[union-attr]
    assert events(flow, record.id)[-1] == ("deny", "U0SRE", "denied")
    assert (await click(flow, record.id, "U0OTHER", act)).status == "already_taken"
    assert act.runs == []
    assert (await flow.on_deny(record.id, "U0OTHER", ())).status == "already_taken"


async def test_no_request_for_an_offer_that_already_ended(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action()
    assert (await click(flow, record.id, "U0SRE", act)).status == "succeeded"
    late = await click(flow, record.id, "U0INTRUDER", act)
    assert late.status == "not_allowed" and late.asked is None


async def test_expired_offer_is_refused(flow: ConfirmFlow, clock: Clock) -> None:
    record = offer(flow)
    act = Action()
    clock.advance(900)
    result = await click(flow, record.id, "U0SRE", act)
    assert result.status == "expired" and result.updates_offer
    assert "expired at 2026-11-30T10:15:00" in result.message
    assert act.checks == 0 and act.runs == []
    assert flow.store.get(record.id).state == "expired"  # type: ignore[union-attr]
    last = flow.audit.query(action_id=record.id)[-1]
    assert (last.event, last.actor, last.outcome) == ("expire", "U0SRE", "expired")
    clock.now = T0  # even if the clock went back, an expired record stays expired
    assert (await click(flow, record.id, "U0SRE", act)).status == "already_taken"
    assert act.runs == []


async def test_precondition_gone_refuses_without_running(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action(holds=False, why="GPU 0 allocation was released by kubelet")
    result = await click(flow, record.id, "U0SRE", act)
    assert result.status == "precondition_failed" and result.updates_offer
    assert "precondition no longer holds: GPU 0 allocation was released by kubelet" in result.message
    assert act.checks == 1 and act.runs == []
    final = flow.store.get(record.id)
    assert final is not None and final.state == "refused"
    assert final.result_summary == "precondition no longer holds: GPU 0 allocation was released by kubelet"
    assert events(flow, record.id)[-1] == ("refuse", "U0SRE", "refused")
    assert (await click(flow, record.id, "U0OTHER", act)).status == "already_taken"
    assert act.runs == []


async def test_precondition_that_cannot_be_checked_refuses(flow: ConfirmFlow) -> None:
    record = offer(flow)

    async def broken(_: PendingAction) -> tuple[bool, str]:
        raise ConnectionError("ssh to gpu-1 timed out")

    act = Action()
    result = await flow.on_click(record.id, "U0SRE", (), precondition=broken, run=act.run)
    assert result.status == "precondition_failed" and act.runs == []
    assert "could not be checked (ConnectionError: ssh to gpu-1 timed out)" in result.message
    assert flow.store.get(record.id).state == "refused"  # type: ignore[union-attr]


# -- failures ---------------------------------------------------------------------------------


async def test_run_reporting_failure_finishes_failed(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action(
        outcome=RunOutcome(
            False,
            "kubelet did not become Ready in 120 s; node left cordoned",
            [StepResult("ok: cordon gpu-1", "ok"), StepResult("failed: wait for gpu-1 Ready — 120 s", "failed")],
        )
    )
    result = await click(flow, record.id, "U0SRE", act)
    assert result.status == "failed" and result.executed
    assert flow.store.get(record.id).state == "failed"  # type: ignore[union-attr]
    # each step with its real outcome: the failed one is recorded as failed
    assert events(flow, record.id)[-3:] == [
        ("step", "gpubot", "ok"), ("step", "gpubot", "failed"), ("result", "gpubot", "failed")
    ]


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (RuntimeError("boom\nTraceback (most recent call last):\n  File x"), "RuntimeError: boom"),
        (
            ActionError("restart failed; node gpu-1 is still cordoned"),
            "restart failed; node gpu-1 is still cordoned",
        ),
        (KeyError(), "KeyError"),
    ],
)
async def test_run_raising_finishes_failed_without_traceback(
    flow: ConfirmFlow, error: Exception, text: str
) -> None:
    record = offer(flow)
    result = await click(flow, record.id, "U0SRE", Action(raises=error))
    assert result.status == "failed" and result.message.endswith(text)
    assert "Traceback" not in result.message and "\n" not in result.message
    final = flow.store.get(record.id)
    assert final is not None and final.state == "failed" and final.result_summary == text
    last = flow.audit.query(action_id=record.id)[-1]
    assert (last.event, last.outcome, last.detail) == ("result", "failed", {"error": text})


async def test_cancelled_run_is_marked_failed_not_left_running(flow: ConfirmFlow) -> None:
    record = offer(flow)
    act = Action(gate=asyncio.Event())  # never released
    task = asyncio.create_task(click(flow, record.id, "U0SRE", act))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not act.runs:
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    final = flow.store.get(record.id)
    assert final is not None and final.state == "failed" and "cancelled" in (final.result_summary or "")
    assert events(flow, record.id)[-1] == ("result", "gpubot", "failed")


# -- restart ----------------------------------------------------------------------------------


async def test_restart_keeps_offers_and_interrupts_what_was_running(db_path: Path, clock: Clock) -> None:
    store, audit = open_sqlite(db_path, clock=clock).actions()
    before = make_flow(store, audit, clock)
    waiting = offer(before)
    running = offer(before)
    assert store.claim(running.id, approver="U0SRE", owner=before.owner).claimed  # then the pod dies
    store.db.close()

    store2, audit2 = open_sqlite(db_path, clock=clock).actions()
    try:
        after = make_flow(store2, audit2, clock)
        assert await after.recover() == []  # its owner may still be alive: left alone for the lease
        clock.advance(after.lease_s + 1)
        interrupted = await after.recover()
        assert [r.id for r in interrupted] == [running.id]
        assert interrupted[0].state == "interrupted" and interrupted[0].approved_by == "U0SRE"
        assert "before its first step" in (interrupted[0].result_summary or "")
        assert events(after, running.id)[-1] == ("interrupted", "gpubot", "interrupted")
        assert await after.recover() == []
        act = Action()
        assert (await click(after, running.id, "U0SRE", act)).status == "already_taken"
        assert act.runs == []  # never re-run
        assert (await click(after, waiting.id, "U0SRE", act)).status == "succeeded"
    finally:
        store2.db.close()


def test_expire_overdue_is_audited(flow: ConfirmFlow, clock: Clock) -> None:
    old = offer(flow)
    clock.advance(600)
    fresh = offer(flow)
    clock.advance(400)
    assert [r.id for r in flow.expire_overdue()] == [old.id]
    assert events(flow, old.id)[-1] == ("expire", "gpubot", "expired")
    assert flow.store.get(fresh.id).state == "pending"  # type: ignore[union-attr]


async def test_the_journal_records_state_and_step_before_the_step_runs(flow: ConfirmFlow) -> None:
    record = offer(flow)
    seen: list[tuple[str, str]] = []

    class Journaled(Action):
        async def run(self, record: PendingAction, journal: RunJournal) -> RunOutcome:
            await journal.before("mv checkpoint", {"backup_planned": "x.bak"})
            stored = flow.store.get(record.id)
            assert stored is not None
            seen.append((str(stored.progress.get("backup_planned")), flow.audit.query(action_id=record.id)[-1].outcome))
            await journal.after("ok: mv checkpoint", "ok")
            return RunOutcome(True, "moved", [StepResult("ok: mv checkpoint", "ok", audited=True)])

    assert (await click(flow, record.id, "U0SRE", Journaled())).status == "succeeded"
    assert seen == [("x.bak", "starting")]
    steps = [(e.outcome, e.detail["step"]) for e in flow.audit.query(action_id=record.id) if e.event == "step"]
    assert steps == [("starting", "mv checkpoint"), ("ok", "ok: mv checkpoint")]  # not written twice


async def test_the_trail_reads_as_a_story(flow: ConfirmFlow) -> None:
    record = offer(flow)
    await click(flow, record.id, "U0INTRUDER", Action())
    await click(flow, record.id, "U0SRE", Action())
    text = format_audit(flow.audit.query(), as_json=False)
    assert [line.split()[1] for line in text.splitlines()[1:]] == [
        "offer",
        "request",
        "approve",
        "start",
        "step",
        "step",
        "step",
        "result",
    ]
    assert "U0INTRUDER is not an approver for kubelet.restart" in text


def test_the_remediation_package_loads_no_slack_and_no_view() -> None:
    """Transitively: importing the package pulls in neither Slack nor a view, the service or the
    simulator. (That the flow layer imports no action or client is checked in ``test_layers``.)"""
    code = (
        "import sys, bot.remediation\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('slack_bolt', 'slack_sdk')"
        " or m.startswith(('bot.slack', 'bot.cli', 'bot.demo', 'bot.server', 'bot.wiring', 'bot.service',"
        " 'bot.sim')))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# -- the state store failing --------------------------------------------------------------------


async def test_a_click_the_store_cannot_answer_runs_nothing_and_the_trail_says_so(
    flow: ConfirmFlow, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = offer(flow, requested_by="U0OTHER")

    def claim_fails(*args: object, **kwargs: object) -> None:
        raise StateStoreError("the Kubernetes API cannot be reached (ReadTimeoutError)")

    monkeypatch.setattr(flow.store, "claim", claim_fails)
    act = Action()
    out = await click(flow, record.id, "U0SRE", act)
    assert out.status == "unavailable" and not act.runs
    assert "Nothing was run: the Kubernetes API cannot be reached" in out.message
    assert events(flow, record.id)[-1] == ("refuse", "U0SRE", "refused")
    reason = flow.audit.query(action_id=record.id)[-1].detail["reason"]
    assert reason == "nothing was run: the Kubernetes API cannot be reached (ReadTimeoutError)"
