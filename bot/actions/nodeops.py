"""What the node-level actions share: reaching the node, cordon bookkeeping, waiting for Ready,
the zombie re-probe, and restoring after a failed step.

The safety rules live here so ``kubelet.restart`` and ``checkpoint.clear`` cannot drift apart:
cordon only a node that is schedulable (and then remember that *we* cordoned it); uncordon only a
node we cordoned, and only once its kubelet is active and the node Ready; after a failure, start
the kubelet if it is not active, then say exactly what state the node is in.

This module must never uncordon a node gpubot did not cordon, nor one whose kubelet is down.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from bot.actions.base import ActionContext
from bot.actions.node_exec import NodeShell
from bot.actions.steps import StepLog
from bot.errors import ActionError, GpubotError, error_text
from bot.probes.checkpoint import CheckpointEntry
from bot.probes.node import ssh_target_for

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


def shell_for(ctx: ActionContext, node: str, node_obj: dict[str, Any] | None) -> NodeShell:
    """A (not yet connected) SSH session to ``node`` with the cluster's key and known_hosts."""
    s, c = ctx.settings, ctx.cluster
    target = ssh_target_for(
        node,
        node_obj,
        user=s.ssh_user,
        key_path=c.ssh_key_path or s.ssh_key_path,
        known_hosts=c.ssh_known_hosts or s.ssh_known_hosts,
        overrides=c.ssh_targets,
    )
    return NodeShell(
        target, timeout=s.ssh_deadline_s, command_timeout=max(MIN_SYSTEMCTL_TIMEOUT_S, s.ssh_deadline_s)
    )


async def zombie_entries(ctx: ActionContext, shell: NodeShell, node: str) -> list[CheckpointEntry]:
    """Checkpoint entries of ``node`` whose pod UID no pod bound to the node has (read fresh)."""
    checkpoint = await shell.read_checkpoint()
    if checkpoint is None:
        return []
    pods = await ctx.kube.list_pods(field_selector=f"spec.nodeName={node}")
    live = {str((p.get("metadata") or {}).get("uid") or "") for p in pods}
    return [e for e in checkpoint.entries if e.pod_uid not in live]


def describe_zombies(entries: list[CheckpointEntry]) -> str:
    uids = sorted({e.pod_uid for e in entries})
    devices = sum(len(e.device_ids) for e in entries)
    shown = ", ".join(u[:8] for u in uids[:4]) + (" …" if len(uids) > 4 else "")
    return f"{len(uids)} pod UID(s) that no longer exist still hold {devices} device(s) ({shown})"


async def wait_ready(ctx: ActionContext, shell: NodeShell, node: str) -> str:
    """Poll until the kubelet is active and the node's Ready condition is True, within the deadline."""
    deadline_s = ctx.settings.node_ready_timeout_s
    deadline = time.monotonic() + deadline_s
    delay = 0.2
    kubelet, ready = "unknown", "unknown"
    while True:
        kubelet = await shell.kubelet_state()
        if kubelet == "active":
            ready = ready_status(await read_node(ctx, node))
            if ready == "True":
                return f"kubelet active, Ready=True after {deadline_s - (deadline - time.monotonic()):.1f}s"
        if time.monotonic() + delay > deadline:
            raise ActionError(
                f"node {node} not Ready within {deadline_s:g}s (kubelet {kubelet}, Ready={ready})"
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


@dataclass
class NodeRun:
    """What a node action has changed so far, so a failure knows what to restore."""

    node: str
    we_cordoned: bool = False
    #: kubelet was stopped, or a start/restart of it failed
    kubelet_down: bool = False
    backup: str = ""


async def cordon_if_needed(ctx: ActionContext, log: StepLog, run: NodeRun, node_obj: dict[str, Any]) -> None:
    what = f"cordon node {run.node}"
    if is_cordoned(node_obj):
        log.skip(what, "already cordoned by someone else; it stays cordoned afterwards")
        return
    await log.run(what, ctx.writer.set_unschedulable(run.node, True))
    run.we_cordoned = True


async def uncordon_if_ours(ctx: ActionContext, log: StepLog, run: NodeRun) -> None:
    what = f"uncordon node {run.node}"
    if not run.we_cordoned:
        log.skip(what, "gpubot did not cordon it")
        return
    await log.run(what, ctx.writer.set_unschedulable(run.node, False))
    run.we_cordoned = False


async def _try(coro: Any) -> tuple[bool, str]:
    try:
        return True, str(await coro)
    except (GpubotError, OSError, TimeoutError, ValueError) as exc:
        return False, error_text(exc)


async def restore(ctx: ActionContext, log: StepLog, run: NodeRun, shell: NodeShell) -> str:
    """After a failed step: start the kubelet if it is down, uncordon only if ours and safe.

    Returns the node's state in words; never raises.
    """
    kubelet = "unknown"
    ok, text = await _try(shell.kubelet_state())
    if ok:
        kubelet = text
    if run.kubelet_down or kubelet not in ("active", "unknown"):
        ok, text = await _try(shell.systemctl("start"))
        log.note("restore: systemctl start kubelet", "ok" if ok else "failed", text)
        ok, text = await _try(shell.kubelet_state())
        kubelet = text if ok else "unknown (ssh failed)"
    ready = "unknown"
    ok, obj = await _try_obj(ctx, run.node)
    if obj is not None:
        ready = ready_status(obj)
    cordoned = is_cordoned(obj) if obj is not None else run.we_cordoned
    if run.we_cordoned:
        if kubelet == "active" and ready == "True":
            ok, text = await _try(ctx.writer.set_unschedulable(run.node, False))
            log.note(f"restore: uncordon node {run.node}", "ok" if ok else "failed", text)
            cordoned = not ok
        else:
            log.skip(
                f"restore: uncordon node {run.node}",
                f"not safe while kubelet is {kubelet} and Ready={ready}; the node stays cordoned",
            )
    return node_state(run, cordoned=cordoned, kubelet=kubelet, ready=ready)


async def _try_obj(ctx: ActionContext, node: str) -> tuple[bool, dict[str, Any] | None]:
    try:
        return True, await read_node(ctx, node)
    except GpubotError:
        return False, None


def node_state(run: NodeRun, *, cordoned: bool, kubelet: str, ready: str) -> str:
    who = " (cordoned by gpubot)" if cordoned and run.we_cordoned else ""
    text = (
        f"node {run.node}: {'CORDONED' + who if cordoned else 'schedulable'}, "
        f"kubelet {kubelet}, Ready={ready}"
    )
    if run.backup:
        text += f"; checkpoint backup at {run.backup}"
    return text
