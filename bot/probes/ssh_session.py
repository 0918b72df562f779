"""One read command's output over a kept SSH connection, gathered by a bare asyncssh session.

``SSHClientConnection.run`` wraps each command in a process with stdin, stdout and stderr stream
objects that refer to the process and it to them: ~24 objects a command that only the cyclic
collector frees. A 500-node node-status left 12,000 of them a run, and with the answer's own
objects that put one young-generation collection (~15 ms, the event loop stopped) inside every
fan-out. A session that only gathers the bytes holds no such cycle: what a command leaves is
freed as soon as the command is done. Imported where a command is run (it imports asyncssh).
"""

from __future__ import annotations

import asyncssh
from asyncssh.constants import EXTENDED_DATA_STDERR


class _Gathered(asyncssh.SSHClientSession[bytes]):
    """The command's stdout and stderr bytes, its exit status or signal."""

    def __init__(self) -> None:
        self.stdout: list[bytes] = []
        self.stderr: list[bytes] = []
        self.exit_status: int | None = None
        self.exit_signal: str | None = None

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        (self.stderr if datatype == EXTENDED_DATA_STDERR else self.stdout).append(data)

    def exit_status_received(self, status: int) -> None:
        self.exit_status = status

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        self.exit_signal = signal


async def gather_output(conn: asyncssh.SSHClientConnection, command: str) -> tuple[bytes, bytes, int | None, bool]:
    """Run ``command`` with nothing on its stdin: (stdout, stderr, exit status, whether it ended
    with a status or a signal at all). A command cut short (the caller's deadline) is closed."""
    session = _Gathered()
    chan, _ = await conn.create_session(lambda: session, command, encoding=None)
    try:
        chan.write_eof()
        await chan.wait_closed()
    finally:
        chan.close()
    ended = session.exit_status is not None or session.exit_signal is not None
    return b"".join(session.stdout), b"".join(session.stderr), session.exit_status, ended

