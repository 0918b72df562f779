"""The remediation loop at a terminal: ``gpubot act`` (typed confirmation) and ``gpubot audit``.

``cli_act`` runs one action through the same service, flow and audit trail as a Slack click, with
the target's name typed in place of a button; the actor is the OS account running it
(``os_actor``: the real uid's name in the password database, never an environment variable).
``print_audit`` only reads: it opens the SQLite file named by ``settings.state_path`` (creating
the schema if the file is new, so a fresh install prints "no audit entries" rather than an error)
and never appends to the trail or changes a pending action.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from bot.actions import get_action
from bot.errors import UsageError
from bot.remediation.audit import format_audit, parse_since
from bot.remediation.policy import ApproverPolicy
from bot.remediation.service import ClusterClients, RemediationService
from bot.settings import Settings
from bot.state.contracts import AuditLog, PendingStore
from bot.state.ids import new_action_id
from bot.state.opening import open_sqlite, state_location
from bot.state.records import PendingAction

_CLI_USER = re.compile(r"[^A-Za-z0-9._@-]")


def print_audit(
    settings: Settings,
    *,
    since: str,
    as_json: bool,
    limit: int,
    audit: AuditLog | None = None,
    notes: Sequence[str] = (),
) -> int:
    """Print the newest ``limit`` entries at or after ``since`` (oldest first); exit code 0.

    ``audit`` is the shared trail on the Kubernetes API (``state: kubernetes``); else the state
    file's. The text form starts with where the trail lives and ``notes`` (runs just recovered);
    JSON stays one entry per line.
    """
    if limit < 1:
        raise UsageError("--limit: must be at least 1")
    start = parse_since(since, datetime.now(UTC)) if since else None
    if audit is None:
        audit = open_sqlite(settings.state_path).audit
    text = format_audit(audit.query(start, limit), as_json)
    if not as_json:
        print(f"audit trail: {state_location(settings)}")
        for note in notes:
            print(note)
    if text:
        print(text)
    return 0


def running_records(state: tuple[PendingStore, AuditLog] | None, settings: Settings) -> list[PendingAction]:
    """The records still marked running (a process may have died in them); blocking."""
    store = state[0] if state is not None else open_sqlite(settings.state_path).store
    return store.list(states=["running"], limit=1000)


async def recover_abandoned(
    rem: RemediationService,
    action: str = "",
    params: Mapping[str, str] | None = None,
    *,
    cluster: str = "",
    actor: str = "",
) -> list[str]:
    """Restore the node of every run whose process stopped renewing it, and record it
    ``interrupted``: what a terminal command does first, so no run waits for a ``serve``. Given
    the ``action`` about to run, also a run a process with *another* state left on its node (found
    on the node's lock on the cluster). Returns one line per run recovered."""
    recovered = await rem.recover()
    if action and params is not None:
        now = await asyncio.to_thread(rem.flow.store.now)
        probe = PendingAction(
            id=new_action_id(), action=action, params=dict(params), cluster=cluster, requested_by=actor,
            created_at=now, expires_at=now, approved_by=actor,
        )
        found = await rem.flow.reclaim_node(probe)
        recovered += [found] if found is not None else []
    return recovered_lines(recovered)


def recovered_lines(recovered: Sequence[PendingAction]) -> list[str]:
    """One ``recovered: …`` line per run restored because its process had died."""
    return [
        f"recovered: {r.action} on {r.target} (started by {r.approved_by or 'unknown'}) was interrupted; "
        f"{r.result_summary or 'restored'}"
        for r in recovered
    ]


def cli_actor(username: str) -> str:
    """``cli:<user>`` with only the characters the approver policy accepts."""
    return "cli:" + (_CLI_USER.sub("_", username)[:64] or "unknown")


def os_actor() -> str:
    """Who runs ``gpubot act``: the process's real uid, named from the password database.

    Never ``$USER``/``$LOGNAME`` (``getpass`` reads those first): anyone can set them, and the audit
    trail must name the account that really ran the command. A uid without an entry is ``uid<N>``.
    """
    uid = os.getuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = f"uid{uid}"
    return cli_actor(name)


async def cli_act(
    settings: Settings,
    clients: ClusterClients,
    action_name: str,
    params: Mapping[str, str],
    *,
    actor: str,
    dry_run: bool,
    assume_yes: bool,
    read_line: Callable[[str], str],
    write: Callable[[str], None],
    state: tuple[PendingStore, AuditLog] | None = None,
) -> int:
    """``gpubot act``: plan, typed confirmation, then the same flow and audit as a Slack click.

    ``state`` is the replicas' shared store on the Kubernetes API, so a terminal run takes the same
    per-node lock and writes the same audit trail as the bot; ``None``: the state file.

    The person at the terminal confirms by typing the target's name; they are the requester and
    the approver (the CLI needs cluster credentials already), so the flow's policy for this one
    run names only them and the two-person rule does not apply.
    """
    action = get_action(action_name)
    checked = action.check_params(params)
    rem = RemediationService(settings, clients, policy=ApproverPolicy({action_name: (actor,)}, False), state=state)
    ctx = rem.context(action_name, checked, cluster="")
    for line in await recover_abandoned(rem, action_name, checked, cluster=ctx.cluster.name, actor=actor):
        write(line)
    dry = dry_run or settings.dry_run
    target = action.target(checked)

    def refuse(reason: str) -> None:
        rem.flow.audit.append(
            "refuse", action=action_name, actor=actor, cluster=ctx.cluster.name, target=target,
            detail={"reason": reason}, outcome="refused",
        )

    holds, why = await action.precondition(ctx)
    write(f"{action_name} on {target} (cluster {ctx.cluster.name})")
    write(f"blast radius: {action.blast_radius}")
    write(f"done when: {action.done}")
    write(f"precondition: {'holds' if holds else 'does NOT hold'}: {why}")
    if not holds:
        refuse(f"precondition does not hold: {why}")
        return 1
    write("plan:" + "".join(f"\n  {i}. {s}" for i, s in enumerate(await action.plan(ctx), start=1)))
    if not dry and not assume_yes:
        typed = read_line(f"Type the target name ({target}) to proceed: ").strip()
        if typed != target:
            refuse("typed confirmation did not match")
            write("aborted: the typed name did not match; nothing was changed")
            return 1
    record = await asyncio.to_thread(rem.flow.offer, action_name, checked, ctx.cluster.name, actor)
    outcome = await rem.click(record.id, actor, dry_run=dry)
    # a dead run's lock that ran out while this terminal planned: the click restored its node first
    for line in recovered_lines(outcome.recovered):
        write(line)
    if outcome.recovered and outcome.executed:
        write("the node was restored after the plan above was read; the run checked it again before its first step")
    for i, step in enumerate(outcome.steps, start=1):
        write(f"  step {i}: {step}")
    write(outcome.message)
    return 0 if outcome.status == "succeeded" else 1
