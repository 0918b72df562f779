"""The only commands gpubot runs on a node that change it, over the strict SSH client of the probes.

The write allow-list is exactly: ``systemctl restart|stop|start kubelet``, ``systemctl is-active
kubelet``, and one ``mv`` of the device-plugin checkpoint to a backup beside it, named with a UTC
timestamp that gpubot generates (``kubelet_internal_checkpoint.bak-20260507T102000Z``). The ``mv``
line is built here from constants and our own clock, then added to the allow-list of that one
call, so no other text can ever ride along. Reads (the checkpoint, for the precondition) use the
probes' read allow-list.

This module must never remove the checkpoint outright (a move keeps it for inspection), never
rewrite it (its checksum cannot be recomputed outside Go), and never build a command from a
parameter, a node name or any text a user could influence.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import TracebackType
from typing import Literal

import asyncssh

from bot.errors import ActionError
from bot.probes.checkpoint import CHECKPOINT_PATH, Checkpoint, CheckpointError, parse_checkpoint
from bot.probes.ssh import (
    CAT_CHECKPOINT,
    KUBELET_ACTIVE,
    READ_COMMANDS,
    SshTarget,
    open_connection,
    run_command,
)

RESTART_KUBELET = "systemctl restart kubelet"
STOP_KUBELET = "systemctl stop kubelet"
START_KUBELET = "systemctl start kubelet"
IS_ACTIVE_KUBELET = KUBELET_ACTIVE
#: every fixed write-side command; the checkpoint ``mv`` is added per call (see the docstring)
WRITE_COMMANDS: frozenset[str] = frozenset({RESTART_KUBELET, STOP_KUBELET, START_KUBELET, IS_ACTIVE_KUBELET})
#: the commands that change a node (for tests that prove a dry run sent none)
STATE_CHANGING_PREFIXES: tuple[str, ...] = ("systemctl restart", "systemctl stop", "systemctl start", "mv ")

Verb = Literal["restart", "stop", "start"]
_BY_VERB: dict[str, str] = {"restart": RESTART_KUBELET, "stop": STOP_KUBELET, "start": START_KUBELET}


def backup_path(now: datetime) -> str:
    """Where the checkpoint goes: beside itself, suffixed with our UTC time to the second."""
    return f"{CHECKPOINT_PATH}.bak-{now.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def move_checkpoint_command(now: datetime) -> str:
    return f"mv {CHECKPOINT_PATH} {backup_path(now)}"


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:240]


class NodeShell:
    """One SSH connection to one node for the duration of an action (``async with``)."""

    def __init__(self, target: SshTarget, *, timeout: float, command_timeout: float) -> None:
        self.target = target
        self.timeout = timeout
        self.command_timeout = command_timeout
        self._conn: asyncssh.SSHClientConnection | None = None

    async def __aenter__(self) -> NodeShell:
        self._conn = await open_connection(self.target, timeout=self.timeout)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._conn is not None:
            self._conn.close()
            await self._conn.wait_closed()
            self._conn = None

    async def _run(self, command: str, allowed: frozenset[str]) -> tuple[int, str]:
        if self._conn is None:
            # the connection dropped (or never opened): one fresh attempt, e.g. for a restore step
            self._conn = await open_connection(self.target, timeout=self.timeout)
        try:
            result = await run_command(
                self._conn, command, allowed=allowed, node=self.target.node, timeout=self.command_timeout
            )
        except Exception:
            self._conn.close()
            self._conn = None
            raise
        return result.exit_status, _first_line(result.stderr) or _first_line(result.stdout)

    async def systemctl(self, verb: Verb) -> str:
        """``systemctl <verb> kubelet``; a non-zero exit is an ``ActionError`` with systemd's words."""
        command = _BY_VERB[verb]
        status, text = await self._run(command, WRITE_COMMANDS)
        if status != 0:
            raise ActionError(f"`{command}` exited {status}" + (f": {text}" if text else ""))
        return f"`{command}` exited 0"

    async def kubelet_state(self) -> str:
        """``systemctl is-active kubelet``: active, inactive, failed, activating…"""
        _status, text = await self._run(IS_ACTIVE_KUBELET, WRITE_COMMANDS)
        return text or "unknown"

    async def move_checkpoint(self, now: datetime) -> str:
        """Move the checkpoint to its timestamped backup; returns the backup path."""
        command = move_checkpoint_command(now)
        status, text = await self._run(command, WRITE_COMMANDS | {command})
        if status != 0:
            raise ActionError(f"`mv` of the checkpoint exited {status}" + (f": {text}" if text else ""))
        return backup_path(now)

    async def read_checkpoint(self) -> Checkpoint | None:
        """The parsed checkpoint, ``None`` when the file does not exist; ``ActionError`` if unreadable."""
        if self._conn is None:
            self._conn = await open_connection(self.target, timeout=self.timeout)
        result = await run_command(
            self._conn,
            CAT_CHECKPOINT,
            allowed=READ_COMMANDS,
            node=self.target.node,
            timeout=self.command_timeout,
        )
        if result.exit_status != 0:
            if "No such file" in result.stderr:
                return None
            raise ActionError(
                f"cannot read the checkpoint: {_first_line(result.stderr) or result.exit_status}"
            )
        try:
            return parse_checkpoint(result.stdout)
        except CheckpointError as exc:
            raise ActionError(f"the checkpoint is not readable: {exc}") from None
