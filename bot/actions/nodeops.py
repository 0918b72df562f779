"""What the node-level actions share: reaching the node (SSH or its actuator pod), cordon
bookkeeping, waiting for Ready, the zombie re-probe, and restoring after a failed, cancelled or interrupted run.

The safety rules live here so ``kubelet.restart`` and ``checkpoint.clear`` cannot drift apart:
cordon only a node that is schedulable (and then remember that *we* cordoned it); uncordon only a
node we cordoned, and only once its kubelet is active, the node Ready and its kubelet has posted
a heartbeat since we (re)started it; after a failure, start the kubelet unless it is known to be
active (a state that cannot be read, "unknown", means start it), then say exactly what state the
node is in. What a run has changed (``NodeRun``) is recorded pessimistically *before* each step
(the kubelet counts as down before the stop is sent, the node as cordoned by us before the
PATCH), and written to the journal, so a restore — in this process or after a restart — never
assumes less was changed than was.

This module must never uncordon a node gpubot did not cordon, nor one whose kubelet is down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from bot.actions.actuator import ActuatorChannel
from bot.actions.base import ActionContext
from bot.actions.node_exec import NodeChannel, NodeShell, SshChannel
from bot.actions.node_heartbeat import Heartbeat, read_heartbeat
from bot.actions.steps import StepLog
from bot.errors import ActionError, GpubotError, error_text
from bot.kube.objects import uid_of
from bot.probes.checkpoint import CheckpointEntry
from bot.probes.node import ssh_target_for
from bot.probes.node_access import ssh_configured

#: systemctl itself can take a while on a loaded node; the connection deadline stays the setting's
MIN_SYSTEMCTL_TIMEOUT_S = 30.0


def is_cordoned(node_obj: dict[str, Any]) -> bool:
    return bool((node_obj.get("spec") or {}).get("unschedulable"))


def ready_status(node_obj: dict[str, Any]) -> str:
    """The Ready condition's status: True, False, Unknown, or "missing"."""
    for cond in (node_obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return str(cond.get("status") or "Unknown")
    return "missing"


async def read_node(ctx: ActionContext, node: str) -> dict[str, Any]:
    return await ctx.kube.get_object("Node", node)


def node_via(ctx: ActionContext) -> str:
    """How the node's commands travel, as step lines name it: "actuator" (``node_access: agent``) or "ssh".

    ``auto`` decides without a call: SSH where a key is configured (a lab run from a terminal),
    else the actuator, which the remediation component installs wherever node actions may run
    (the chart mounts an SSH key only for ``node_access: ssh``)."""
    access = ctx.settings.node_access
    if access == "auto":
        access = "ssh" if ssh_configured(ctx.settings, ctx.cluster) else "agent"
    return "actuator" if access == "agent" else "ssh"


def shell_for(ctx: ActionContext, node: str, node_obj: dict[str, Any] | None) -> NodeShell:
    """A (not yet connected) shell on ``node``: exec into its actuator pod with ``node_access:
    agent``, else SSH with the cluster's key and known_hosts."""
    s, c = ctx.settings, ctx.cluster
    command_timeout = max(MIN_SYSTEMCTL_TIMEOUT_S, s.ssh_deadline_s)
    channel: NodeChannel
    if node_via(ctx) == "actuator":
        channel = ActuatorChannel(ctx.kube, c, s.namespace, node, node_obj, command_timeout=command_timeout)
    else:
        target = ssh_target_for(
            node,
            node_obj,
            user=s.ssh_user,
            key_path=c.ssh_key_path or s.ssh_key_path,
            known_hosts=c.ssh_known_hosts or s.ssh_known_hosts,
            overrides=c.ssh_targets,
        )
        channel = SshChannel(target, timeout=s.ssh_deadline_s, command_timeout=command_timeout)
    return NodeShell(channel)


async def zombie_entries(ctx: ActionContext, shell: NodeShell, node: str) -> list[CheckpointEntry]:
    """Checkpoint entries of ``node`` whose pod UID no pod bound to the node has (read fresh)."""
    checkpoint = await shell.read_checkpoint()
    if checkpoint is None:
        return []
    pods = await ctx.kube.list_pods(field_selector=f"spec.nodeName={node}")
    live = {uid_of(p) for p in pods}
    return [e for e in checkpoint.entries if e.pod_uid not in live]


def describe_zombies(entries: list[CheckpointEntry]) -> str:
    uids = sorted({e.pod_uid for e in entries})
    devices = sum(len(e.device_ids) for e in entries)
    shown = ", ".join(u[:8] for u in uids[:4]) + (" …" if len(uids) > 4 else "")
    return f"{len(uids)} pod UID(s) that no longer exist still hold {devices} device(s) ({shown})"


@dataclass
class NodeRun:
    """What a node action has changed so far, so a failure (or a restarted bot) knows what to restore."""

    node: str
    #: gpubot cordoned the node (set before the PATCH is sent)
    we_cordoned: bool = False
    #: the kubelet may be stopped (set before stop/restart is sent, cleared once a start worked)
    kubelet_down: bool = False
    #: where the checkpoint was moved, once the move is confirmed
    backup: str = ""
    #: where the checkpoint is being moved (set before the ``mv`` is sent)
    backup_planned: str = ""
    #: the node's heartbeats just before the kubelet was (re)started: Ready must come after them
    before_start: Heartbeat = field(default_factory=Heartbeat)

    def progress(self) -> dict[str, Any]:
        """The journal's copy: what a restore after a restart needs."""
        return {
            "node": self.node,
            "we_cordoned": self.we_cordoned,
            "kubelet_down": self.kubelet_down,
            "backup": self.backup,
            "backup_planned": self.backup_planned,
            "before_start": self.before_start.to_dict(),
        }

    @classmethod
    def from_progress(cls, node: str, data: dict[str, Any]) -> NodeRun:
        return cls(
            node,
            we_cordoned=bool(data.get("we_cordoned")),
            kubelet_down=bool(data.get("kubelet_down")),
            backup=str(data.get("backup") or ""),
            backup_planned=str(data.get("backup_planned") or ""),
            before_start=Heartbeat.from_dict(data.get("before_start")),
        )


async def wait_ready(ctx: ActionContext, shell: NodeShell, node: str, *, since: Heartbeat) -> str:
    """Poll until the kubelet is active and the node Ready with a heartbeat newer than ``since``
    (the readings taken just before the kubelet was started), within ``node_ready_timeout_s``."""
    deadline_s = ctx.settings.node_ready_timeout_s
    deadline = time.monotonic() + deadline_s
    delay = 0.2
    kubelet, ready, beat = "unknown", "unknown", "no heartbeat since the restart"
    while True:
        kubelet = await shell.kubelet_state()
        if kubelet == "active":
            obj = await read_node(ctx, node)
            ready = ready_status(obj)
            now = await read_heartbeat(ctx, node, obj)
            fresh = now.newer_than(since)
            if ready == "True" and fresh is not False:
                took = deadline_s - (deadline - time.monotonic())
                proof = now.describe() if fresh else "no heartbeat to compare, Ready taken as shown"
                return f"kubelet active, Ready=True ({proof}) after {took:.1f}s"
            if fresh is False:
                beat = f"last {now.describe()}, before the restart"
        if time.monotonic() + delay > deadline:
            raise ActionError(
                f"node {node} not Ready within {deadline_s:g}s (kubelet {kubelet}, Ready={ready}, {beat})"
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


async def cordon_if_needed(ctx: ActionContext, log: StepLog, run: NodeRun, node_obj: dict[str, Any]) -> None:
    what = f"cordon node {run.node}"
    if is_cordoned(node_obj):
        await log.skip(what, "already cordoned by someone else; it stays cordoned afterwards")
        return
    run.we_cordoned = True  # before the PATCH: if its answer is lost, the restore still knows
    await log.run(what, ctx.writer.set_unschedulable(run.node, True), progress=run.progress())


async def uncordon_if_ours(ctx: ActionContext, log: StepLog, run: NodeRun) -> None:
    what = f"uncordon node {run.node}"
    if not run.we_cordoned:
        await log.skip(what, "gpubot did not cordon it")
        return
    await log.run(what, ctx.writer.set_unschedulable(run.node, False), progress=run.progress())
    run.we_cordoned = False


async def _try(work: Awaitable[Any]) -> tuple[bool, str]:
    try:
        return True, str(await work)
    except (GpubotError, OSError, TimeoutError, ValueError) as exc:
        return False, error_text(exc)


async def restore(ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell) -> str:
    """After a failed, cancelled or interrupted run: start the kubelet unless it reads active now,
    wait for its heartbeat, uncordon only if ours and safe.

    Returns the node's state in words; never raises (every outcome is a recorded step).
    """
    ok, kubelet = await _try(shell.kubelet_state())
    if not ok:
        kubelet = "unknown"
    started = False
    if kubelet != "active":
        # anything but a clear "active" is started: "unknown" (unreadable, or systemd's own word),
        # inactive, failed, deactivating after a stop whose answer was lost
        before = await _heartbeat_or_empty(ctx, run.node)
        ok, text = await _try(shell.systemctl("start"))
        await log.note("restore: systemctl start kubelet", "ok" if ok else "failed", text)
        ok, text = await _try(shell.kubelet_state())
        kubelet = text if ok else f"unknown ({shell.via} failed)"
        if kubelet == "active":
            started = True
            run.before_start = before
    elif run.kubelet_down:
        # a stop or restart whose answer never came, and the kubelet reads active: trust it only
        # once it has posted a heartbeat (below), as after a start
        started = True
    ready = "unknown"
    obj = await _node_or_none(ctx, run.node)
    if obj is not None:
        ready = ready_status(obj)
    cordoned = is_cordoned(obj) if obj is not None else run.we_cordoned
    if run.we_cordoned and cordoned:
        posted = True
        if kubelet == "active" and started:
            posted, text = await _try(wait_ready(ctx, shell, run.node, since=run.before_start))
            await log.note(f"restore: wait for node {run.node} Ready", "ok" if posted else "failed", text)
            ready = "True" if posted else ready
            run.kubelet_down = not posted
        elif kubelet == "active" and obj is not None:
            # started earlier in the run: Ready may still be the stale True of the old kubelet
            posted = (await read_heartbeat(ctx, run.node, obj)).newer_than(run.before_start) is not False
        if kubelet == "active" and ready == "True" and posted:
            ok, text = await _try(ctx.writer.set_unschedulable(run.node, False))
            await log.note(f"restore: uncordon node {run.node}", "ok" if ok else "failed", text)
            cordoned = not ok
        else:
            why = "" if posted else ", no heartbeat since the kubelet was started"
            await log.skip(
                f"restore: uncordon node {run.node}",
                f"not safe while kubelet is {kubelet} and Ready={ready}{why}; the node stays cordoned",
            )
    return node_state(run, cordoned=cordoned, kubelet=kubelet, ready=ready)


async def _heartbeat_or_empty(ctx: ActionContext, node: str) -> Heartbeat:
    obj = await _node_or_none(ctx, node)
    return await read_heartbeat(ctx, node, obj) if obj is not None else Heartbeat()


async def _node_or_none(ctx: ActionContext, node: str) -> dict[str, Any] | None:
    try:
        return await read_node(ctx, node)
    except GpubotError:
        return None


def node_state(run: NodeRun, *, cordoned: bool, kubelet: str, ready: str) -> str:
    who = " (cordoned by gpubot)" if cordoned and run.we_cordoned else ""
    text = (
        f"node {run.node}: {'CORDONED' + who if cordoned else 'schedulable'}, "
        f"kubelet {kubelet}, Ready={ready}"
    )
    if run.backup:
        text += f"; checkpoint backup at {run.backup}"
    elif run.backup_planned:
        text += f"; the checkpoint may have been moved to {run.backup_planned} (the move was not confirmed)"
    return text
