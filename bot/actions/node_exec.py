"""The only commands gpubot runs on a node that change it, and the shell that runs them over a channel.

The write allow-list is exactly: ``systemctl restart|stop|start kubelet``, ``systemctl is-active
kubelet``, and one ``mv`` of the device-plugin checkpoint to a backup beside it, named with the
UTC time to the nanosecond and the action's id
(``kubelet_internal_checkpoint.bak-20260507T102000.123456789Z-Ab3_x9QkLm2P``), so two runs never
share a backup name. The ``mv`` line is built here from constants, our own clock and an id we
issued (checked against the id alphabet), then added to the allow-list of that one call, so no
other text can ever ride along. Reads (the checkpoint, for the precondition) use the probes'
read allow-list.

A connection lost mid-command is an error, never an exit status to read: the outcome of that
command is unknown. The shell then reconnects once; a command that is safe to repeat (stop,
start, is-active, reading the checkpoint) is asked again on the new connection, the others
(restart, ``mv``) fail with "outcome unknown" and the action's restore path takes over.

``NodeShell`` holds these semantics once, over a ``NodeChannel``: ``SshChannel`` (below, the
probes' strict SSH client) or ``bot.actions.actuator.ActuatorChannel`` (exec into the node's
``gpubot-actuator`` pod, for ``node_access: agent``), so the node procedure, its persisted state
and its restore run alike over either.

This module must never remove the checkpoint outright (a move keeps it for inspection), never
rewrite it (its checksum cannot be recomputed outside Go), and never build a command from a
parameter, a node name or any text a user could influence.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol

from bot.errors import ActionError
from bot.probes.checkpoint import CHECKPOINT_PATH, Checkpoint, CheckpointError, parse_checkpoint
from bot.probes.ssh import (
    CAT_CHECKPOINT,
    KUBELET_ACTIVE,
    READ_COMMANDS,
    CommandResult,
    SshTarget,
    TransientSshError,
    open_connection,
    run_command,
)

if TYPE_CHECKING:  # asyncssh is imported by the probes' SSH client when it connects
    import asyncssh

RESTART_KUBELET = "systemctl restart kubelet"
STOP_KUBELET = "systemctl stop kubelet"
START_KUBELET = "systemctl start kubelet"
IS_ACTIVE_KUBELET = KUBELET_ACTIVE
#: every fixed write-side command; the checkpoint ``mv`` is added per call (see the docstring)
WRITE_COMMANDS: frozenset[str] = frozenset({RESTART_KUBELET, STOP_KUBELET, START_KUBELET, IS_ACTIVE_KUBELET})
#: the commands that change a node (for tests that prove a dry run sent none)
STATE_CHANGING_PREFIXES: tuple[str, ...] = ("systemctl restart", "systemctl stop", "systemctl start", "mv ")

#: commands whose second run changes nothing the first did not: asked again after a lost connection
REPEATABLE: frozenset[str] = frozenset({STOP_KUBELET, START_KUBELET, IS_ACTIVE_KUBELET, CAT_CHECKPOINT})

Verb = Literal["restart", "stop", "start"]
_BY_VERB: dict[str, str] = {"restart": RESTART_KUBELET, "stop": STOP_KUBELET, "start": START_KUBELET}
#: how much of the action id names a backup (72 random bits; the nanosecond time does the rest)
BACKUP_ID_CHARS = 12
_ID_CHARS = re.compile(r"[A-Za-z0-9_-]{8,32}")


def backup_path(ns: int, action_id: str) -> str:
    """Where the checkpoint goes: beside itself, suffixed with UTC time in nanoseconds and the
    action's id; ``ValueError`` for an id that is not one of ours."""
    short = action_id[:BACKUP_ID_CHARS]
    if not _ID_CHARS.fullmatch(short):
        raise ValueError("a checkpoint backup is named after a pending action's id")
    seconds, nanos = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y%m%dT%H%M%S")
    return f"{CHECKPOINT_PATH}.bak-{stamp}.{nanos:09d}Z-{short}"


def new_backup_path(action_id: str) -> str:
    """The backup name for a move made now."""
    return backup_path(time.time_ns(), action_id)


_BACKUP_RE = re.compile(re.escape(CHECKPOINT_PATH) + r"\.bak-\d{8}T\d{6}\.\d{9}Z-[A-Za-z0-9_-]{8,32}")


def move_checkpoint_command(backup: str) -> str:
    """The one ``mv`` line; ``ValueError`` unless ``backup`` is a name ``backup_path`` makes."""
    if not _BACKUP_RE.fullmatch(backup):
        raise ValueError("the checkpoint backup must be named by backup_path")
    return f"mv {CHECKPOINT_PATH} {backup}"


def is_checkpoint_move(command: str) -> bool:
    """Whether ``command`` is exactly a ``move_checkpoint_command`` line (the one generated ``mv``)."""
    return _MOVE_RE.fullmatch(command) is not None


_MOVE_RE = re.compile(f"mv {re.escape(CHECKPOINT_PATH)} {_BACKUP_RE.pattern}")


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:240]


class AnswerLost(Exception):
    """The channel was lost after the command was sent and before its exit status came: its outcome
    is unknown (a channel raises it; ``NodeShell`` decides whether to ask again)."""


class NodeChannel(Protocol):
    """How one allow-listed command reaches a node for an action.

    ``open`` connects (or finds the pod to exec into) and raises ``GpubotError`` when it cannot:
    then nothing was sent. ``run`` sends one command from ``allowed`` (``ValueError``, nothing
    sent, for any other), opening again after ``drop``; it raises ``AnswerLost`` when the answer
    was lost after sending, ``GpubotError`` for the rest. A non-zero exit is a result.
    """

    node: str
    #: the transport in step lines and errors: "ssh" or "actuator"
    via: str
    #: what was lost, in words: "the connection to NODE", "the exec stream to POD on NODE"
    link: str

    async def open(self) -> None: ...

    async def run(self, command: str, allowed: frozenset[str]) -> CommandResult: ...

    def drop(self) -> None: ...

    async def close(self) -> None: ...


class SshChannel:
    """One SSH connection to one node, reopened after a drop."""

    via = "ssh"

    def __init__(self, target: SshTarget, *, timeout: float, command_timeout: float) -> None:
        self.target = target
        self.node = target.node
        self.link = f"the connection to {target.node}"
        self.timeout = timeout
        self.command_timeout = command_timeout
        self._conn: asyncssh.SSHClientConnection | None = None

    async def open(self) -> None:
        if self._conn is None:
            self._conn = await open_connection(self.target, timeout=self.timeout)

    async def run(self, command: str, allowed: frozenset[str]) -> CommandResult:
        if command not in allowed:
            raise ValueError(f"command not in the allow-list: {command!r}")
        await self.open()
        assert self._conn is not None
        try:
            return await run_command(
                self._conn, command, allowed=allowed, node=self.node, timeout=self.command_timeout
            )
        except TransientSshError:
            raise AnswerLost(command) from None

    def drop(self) -> None:
        if self._conn is not None:
            self._conn.abort()
            self._conn = None

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            await conn.wait_closed()


class NodeShell:
    """One node's channel for the duration of an action (``async with``), with the write semantics."""

    def __init__(self, channel: NodeChannel) -> None:
        self.channel = channel

    @property
    def via(self) -> str:
        return self.channel.via

    async def __aenter__(self) -> NodeShell:
        await self.channel.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self.channel.close()

    async def _result(self, command: str, allowed: frozenset[str]) -> CommandResult:
        for attempt in (1, 2):
            try:
                # after a drop the channel opens afresh (e.g. for a restore step)
                return await self.channel.run(command, allowed)
            except AnswerLost:
                self.channel.drop()
                if attempt == 1 and command in REPEATABLE:
                    continue  # reconnect once and ask again: running it twice changes nothing
                raise ActionError(
                    f"`{command}`: {self.channel.link} was lost before it answered; its outcome is unknown"
                ) from None
            except BaseException:
                self.channel.drop()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _run(self, command: str, allowed: frozenset[str]) -> tuple[int, str]:
        result = await self._result(command, allowed)
        return result.exit_status, _first_line(result.stderr) or _first_line(result.stdout)

    async def systemctl(self, verb: Verb) -> str:
        """``systemctl <verb> kubelet``; a non-zero exit is an ``ActionError`` with systemd's words."""
        command = _BY_VERB[verb]
        status, text = await self._run(command, WRITE_COMMANDS)
        if status != 0:
            raise ActionError(f"`{command}` exited {status}" + (f": {text}" if text else ""))
        return f"`{command}` exited 0"

    async def kubelet_state(self) -> str:
        """``systemctl is-active kubelet``: active, inactive, failed, activating, unknown…"""
        _status, text = await self._run(IS_ACTIVE_KUBELET, WRITE_COMMANDS)
        return text or "unknown"

    async def move_checkpoint(self, backup: str) -> str:
        """Move the checkpoint to ``backup`` (from ``backup_path``); returns the backup path."""
        command = move_checkpoint_command(backup)
        status, text = await self._run(command, WRITE_COMMANDS | {command})
        if status != 0:
            raise ActionError(f"`mv` of the checkpoint exited {status}" + (f": {text}" if text else ""))
        return backup

    async def read_checkpoint(self) -> Checkpoint | None:
        """The parsed checkpoint, ``None`` when the file does not exist; ``ActionError`` if unreadable."""
        result = await self._result(CAT_CHECKPOINT, READ_COMMANDS)
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
