"""The SSH client boundary: strict host-key checking, key-only auth, allow-listed commands.

Everything gpubot runs on a node goes through ``run_command``, which refuses (before anything is
sent) a command that is not in the caller's allow-list. The reads are nvidia-smi queries (cards,
processes, the summary table, ECC / retired pages / remapped rows), the kubelet checkpoint,
``ls -l /dev/nvidia*``, ``systemctl is-active kubelet``, the driver version and the kernel log
(``journalctl -k``, or ``dmesg`` where there is no journal) for NVRM Xid lines. Probes pass ``READ_COMMANDS``; the
actions package passes its own write list. Command strings are constants: no user text, node
name or pod name is ever interpolated into one.

asyncssh and socket errors are translated here into ``NodeProbeError`` with a ``reason`` of
``refused``, ``timeout``, ``auth``, ``host-key`` or ``error``; their messages never include key
material. This module must never disable host-key checking, accept an unknown host key, use an
ssh-agent or a password, or read ~/.ssh/config.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.errors import NodeProbeError
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.probes.devices import LS_DEV_NVIDIA
from bot.probes.gpu_health import ECC_QUERY, KERNEL_LOG, KERNEL_LOG_DMESG
from bot.probes.lines import lines_starting_with
from bot.probes.nvidia_smi import APPS_QUERY, GPU_QUERY, SUMMARY

if TYPE_CHECKING:
    # asyncssh (with cryptography) is imported where a node is first reached, not with this module:
    # its constants are imported by every command, and most never open an SSH connection
    import asyncssh

#: how the GPU Operator's containerised driver exposes its binaries on the host
OPERATOR_PREFIX = "chroot /run/nvidia/driver "

CAT_CHECKPOINT = f"cat {CHECKPOINT_PATH}"
KUBELET_ACTIVE = "systemctl is-active kubelet"
DRIVER_VERSION = "cat /proc/driver/nvidia/version"
NVIDIA_SMI_COMMANDS: tuple[str, ...] = (GPU_QUERY, APPS_QUERY, SUMMARY, ECC_QUERY)

#: what a probe reads first on every node (the dmesg and GPU-Operator fallbacks come after)
FIRST_READS: tuple[str, ...] = (
    *NVIDIA_SMI_COMMANDS,
    CAT_CHECKPOINT,
    LS_DEV_NVIDIA,
    KUBELET_ACTIVE,
    DRIVER_VERSION,
    KERNEL_LOG,
)

#: AES-GCM first, then asyncssh's own order (ChaCha20-Poly1305 first): every node read runs on the
#: bot's one event loop, and asyncssh seals each ChaCha20 packet in several Python-level cipher
#: calls (~14 us a packet, measured) where AES-GCM is one OpenSSL call (~2.5 us). Every OpenSSH
#: since 6.2 offers AES-GCM; a server without it still gets the rest of the default list.
ENCRYPTION_ALGS: tuple[str, ...] = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes256-ctr",
    "aes192-ctr",
    "aes128-ctr",
)

#: marks the sections of the combined read's output
READ_MARK = "@@gpubot-read"


def _section(index: int, command: str) -> str:
    """One read inside the combined command: a start line, its stdout as is, a status line
    (after a newline of its own), its stderr lines prefixed. The pipeline ends (sed included)
    before the next section starts, so every stderr line stays inside its section."""
    return (
        f"echo '{READ_MARK} {index}'; "
        f"{{ {{ {command}; printf '\\n{READ_MARK}-rc %s\\n' $?; }} 2>&1 1>&3 | sed 's/^/{READ_MARK}-err /'; }} 3>&1"
    )


#: every first read in one constant command (one round trip per node instead of nine channels);
#: built from constants only, so it is as fixed as each of them
COMBINED_READ = "; ".join(_section(i, c) for i, c in enumerate(FIRST_READS))


def frame_reads(results: list[tuple[str, str, int]]) -> str:
    """What ``COMBINED_READ`` prints for these (stdout, stderr, exit status) of ``FIRST_READS``
    (the simulator answers with it; a real node's shell prints the same)."""
    out = []
    for i, (stdout, stderr, status) in enumerate(results):
        out.append(f"{READ_MARK} {i}\n{stdout}\n{READ_MARK}-rc {status}\n")
        out += [f"{READ_MARK}-err {line}\n" for line in stderr.splitlines()]
    return "".join(out)


#: what follows the mark on each kind of marker line: a section's start, a stderr line, its status
_MARK_KINDS = (" ", "-err ", "-rc ")


def _marker_lines(text: str) -> Iterator[tuple[int, int, str, str]]:
    """(line start, line end, kind, rest of the line) of every marker line, in order."""
    for at, end in lines_starting_with(text, READ_MARK):
        tail = text[at + len(READ_MARK) : end]
        for kind in _MARK_KINDS:
            if tail.startswith(kind):
                yield at, end, kind, tail[len(kind) :]
                break


def split_reads(text: str) -> dict[str, CommandResult] | None:
    """``COMBINED_READ``'s output back into each command's result; None when a section is
    missing (a shell that could not run it: the caller runs the commands one by one).

    Every node's read comes through here (hundreds in a fleet-wide node-status), so the stdout
    between the marker lines is sliced, not split into lines: a section's stdout is every line
    after its start line and before its status line that is not a marker line; its stderr lines
    may come anywhere after its start."""
    sections: dict[int, tuple[list[str], list[str], list[int]]] = {}
    current: tuple[list[str], list[str], list[int]] | None = None
    pos = 0
    for start, end, kind, rest in _marker_lines(text):
        if current is not None and not current[2] and start > pos:
            current[0].append(text[pos : start - 1])
        pos = end + 1
        if kind == " ":
            index = rest.strip()
            if not index.isdigit():
                return None
            current = sections.setdefault(int(index), ([], [], []))
        elif current is None:
            continue
        elif kind == "-err ":
            current[1].append(rest)
        else:
            status = rest.strip()
            current[2].append(int(status) if status.lstrip("-").isdigit() else -1)
    if current is not None and not current[2] and pos <= len(text):
        current[0].append(text[pos:])
    if sorted(sections) != list(range(len(FIRST_READS))) or any(not rc for _, _, rc in sections.values()):
        return None
    return {
        command: CommandResult(
            stdout="\n".join(sections[i][0])[:MAX_OUTPUT_BYTES],
            stderr="".join(e + "\n" for e in sections[i][1]),
            exit_status=sections[i][2][0],
        )
        for i, command in enumerate(FIRST_READS)
    }


#: every command a probe may run on a node, exactly as sent
READ_COMMANDS: frozenset[str] = frozenset(
    {
        COMBINED_READ,
        *NVIDIA_SMI_COMMANDS,
        *(OPERATOR_PREFIX + c for c in NVIDIA_SMI_COMMANDS),
        CAT_CHECKPOINT,
        LS_DEV_NVIDIA,
        KUBELET_ACTIVE,
        DRIVER_VERSION,
        KERNEL_LOG,
        KERNEL_LOG_DMESG,
    }
)


@dataclass(frozen=True)
class SshTarget:
    """Where and as whom to reach one node; ``known_hosts`` is required (strict checking)."""

    node: str
    host: str
    port: int
    user: str
    key_path: str
    known_hosts: str


@dataclass(frozen=True)
class CommandResult:
    """One allow-listed command's output and exit status, the same whether it ran over SSH or by
    exec in the node agent, so the parsers never need to know the transport."""

    stdout: str
    stderr: str
    exit_status: int


class TransientSshError(NodeProbeError):
    """The peer accepted the connection and then dropped it (reset, lost mid-handshake).

    sshd does this when it throttles unauthenticated connections (``MaxStartups``), so one
    retry can succeed; the other reasons cannot change within a probe's deadline.
    """

    def __init__(self, node: str, detail: str = "") -> None:
        super().__init__(node, "error", detail)


def _translate(node: str, exc: BaseException) -> NodeProbeError:
    """Our error for a library error, with a detail that never carries key material."""
    if isinstance(exc, NodeProbeError):
        return exc
    import asyncssh

    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return NodeProbeError(node, "host-key", "host key not in known_hosts or does not match")
    if isinstance(exc, asyncssh.PermissionDenied):
        return NodeProbeError(node, "auth", "the node rejected the key")
    if isinstance(exc, ConnectionRefusedError) or _all_refused(exc):
        return NodeProbeError(node, "refused", "connection refused")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | asyncssh.TimeoutError):
        return NodeProbeError(node, "timeout", "no answer in time")
    if isinstance(exc, ConnectionResetError | asyncssh.ConnectionLost):
        return TransientSshError(node, "connection dropped by the node")
    if isinstance(exc, asyncssh.DisconnectError):
        return NodeProbeError(node, "error", f"disconnected: {exc.reason}"[:200])
    if isinstance(exc, asyncssh.KeyImportError):
        return NodeProbeError(node, "error", "the client key cannot be read")
    if isinstance(exc, OSError):
        return NodeProbeError(node, "error", exc.strerror or type(exc).__name__)
    return NodeProbeError(node, "error", type(exc).__name__)


def _all_refused(exc: BaseException) -> bool:
    """asyncio reports a refusal on every address of a name as one plain OSError."""
    return isinstance(exc, OSError) and (
        exc.errno == errno.ECONNREFUSED or (exc.errno is None and "[Errno 111]" in str(exc))
    )


_KnownHostsKey = tuple[str, int, int, int]
_known_hosts_cache: dict[str, tuple[_KnownHostsKey, asyncssh.SSHKnownHosts]] = {}
_client_key_cache: dict[str, tuple[_KnownHostsKey, asyncssh.SSHKey]] = {}


def _stamp(path: str) -> _KnownHostsKey:
    info = os.stat(path)
    return (path, info.st_ino, info.st_mtime_ns, info.st_size)


def _known_hosts(path: str) -> asyncssh.SSHKnownHosts:
    """The parsed file, re-read whenever it changes.

    Parsing known_hosts on every connection is O(nodes) per node, so O(nodes²) for a fleet
    sweep; caching by (mtime, size) keeps the lookup a dict hit without ever using stale keys.
    """
    import asyncssh

    stamp = _stamp(path)
    cached = _known_hosts_cache.get(path)
    if cached is None or cached[0] != stamp:
        cached = (stamp, asyncssh.read_known_hosts(path))
        _known_hosts_cache[path] = cached
    return cached[1]


def _client_key(path: str) -> asyncssh.SSHKey:
    import asyncssh

    stamp = _stamp(path)
    cached = _client_key_cache.get(path)
    if cached is None or cached[0] != stamp:
        cached = (stamp, asyncssh.read_private_key(path))
        _client_key_cache[path] = cached
    return cached[1]


async def open_connection(target: SshTarget, *, timeout: float) -> asyncssh.SSHClientConnection:
    """Connect and authenticate within ``timeout`` seconds, or raise NodeProbeError."""
    import asyncssh

    if not target.known_hosts:
        # asyncssh treats known_hosts=None as "accept anything"; an empty setting must not get there
        raise NodeProbeError(target.node, "host-key", "no known_hosts file configured")
    if not target.key_path:
        raise NodeProbeError(target.node, "auth", "no SSH key configured")
    try:
        known_hosts = _known_hosts(target.known_hosts)
    except (OSError, ValueError, asyncssh.Error):
        raise NodeProbeError(target.node, "host-key", "cannot read the known_hosts file") from None
    try:
        client_key = _client_key(target.key_path)
    except (OSError, ValueError, asyncssh.Error):
        raise NodeProbeError(target.node, "auth", "cannot read the SSH key file") from None
    try:
        async with asyncio.timeout(timeout):
            return await asyncssh.connect(
                target.host,
                target.port,
                username=target.user,
                known_hosts=known_hosts,
                client_keys=[client_key],
                config=None,
                agent_path=None,
                password=None,
                password_auth=False,
                kbdint_auth=False,
                gss_host=None,
                host_based_auth=False,
                preferred_auth="publickey",
                encryption_algs=list(ENCRYPTION_ALGS),
                connect_timeout=timeout,
                login_timeout=timeout,
            )
    except (asyncssh.Error, OSError, TimeoutError, ValueError) as exc:
        raise _translate(target.node, exc) from None


async def run_command(
    conn: asyncssh.SSHClientConnection,
    command: str,
    *,
    allowed: frozenset[str],
    node: str = "",
    timeout: float | None = None,
) -> CommandResult:
    """Run one allow-listed command; ``ValueError`` (nothing sent) for any other.

    A non-zero exit is a result, not an error: the caller reads it (127 = not installed).
    """
    if command not in allowed:
        raise ValueError(f"command not in the allow-list: {command!r}")
    import asyncssh

    from bot.probes.ssh_session import gather_output

    name = node or str(conn.get_extra_info("peername", ("?",))[0])
    try:
        async with asyncio.timeout(timeout):
            # bytes, decoded leniently below: one stray byte must not make a node look unreachable
            stdout, stderr, status, ended = await gather_output(conn, command)
    except (asyncssh.Error, OSError, TimeoutError) as exc:
        raise _translate(name, exc) from None
    if not ended:
        # the channel closed without an exit status: the connection was lost mid-command, so
        # nothing is known about the outcome; an error, never a result to interpret
        raise TransientSshError(name, "connection lost before the command finished")
    return CommandResult(
        stdout=_text(stdout),
        stderr=_text(stderr),
        exit_status=status if status is not None else -1,
    )


#: the most output kept from one read command: a corrupt 50 MB checkpoint is evidence, not payload
MAX_OUTPUT_BYTES = 4 * 1024 * 1024


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value[:MAX_OUTPUT_BYTES]).decode("utf-8", "replace")
    return str(value)[:MAX_OUTPUT_BYTES]
