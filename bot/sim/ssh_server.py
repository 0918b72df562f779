"""The simulated nodes: one asyncssh server per node, answering a fixed table of commands.

Each node listens on 127.0.0.1 (port 0) with its own host key and accepts only the fleet's client
key, so the bot's strict SSH client is exercised exactly as against real nodes. Faults from the
scenario (``ssh:``) behave like the real thing at the socket level. Commands are matched against
a table and answered from the node's facts; anything else exits 127 and is recorded with
``allowed=False``, so a test can prove that a probe never ran anything off its allow-list.

This module must never run a real shell or process: a command line is parsed here, by hand.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

import asyncssh

from bot.probes.agent_reads import AGENT_READ_COMMANDS
from bot.probes.ssh import COMBINED_READ, FIRST_READS, KUBELET_ACTIVE, READ_COMMANDS, frame_reads
from bot.sim.agent_reads import agent_read
from bot.sim.keys import FleetKeys, generate_keys, write_client_files
from bot.sim.nvidia_smi import render
from bot.sim.scenario import DevFile, KernelLine, NodeFacts, Scenario

HOST = "127.0.0.1"
CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
DRIVER_ROOT = "/run/nvidia/driver"
#: what systemctl says in a container whose PID 1 is not systemd (an unprivileged node agent)
NO_SYSTEMD = (
    "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
    "Failed to connect to bus: Host is down\n"
)
#: ``…checkpoint.bak-20260507T102000.123456789Z-<action id>``: nanosecond UTC time plus the action's id
_BACKUP = re.compile(re.escape(CHECKPOINT) + r"\.bak-\d{8}T\d{6}\.\d{9}Z-[A-Za-z0-9_-]{8,32}")
_MV = re.compile(r"mv " + re.escape(CHECKPOINT) + r" (?P<dest>" + _BACKUP.pattern + r")")
_CAT_BACKUP = re.compile(r"cat (?P<path>" + _BACKUP.pattern + r")")
#: what a node's gpubot-actuator runs in the host: the kubelet unit's verbs, the checkpoint read
#: for the precondition and its one move (``_MV``); the rest exits 127 and changes nothing
_ACTUATOR_LINES = frozenset(
    {f"systemctl {verb} kubelet" for verb in ("stop", "start", "restart", "is-active")} | {f"cat {CHECKPOINT}"}
)
#: characters a shell would interpret; no allowed command contains one
_SHELL_META = frozenset(";&|$`<>(){}\\!\"'\n\r#~")
_KUBELET_FAILED = (
    "Job for kubelet.service failed because the control process exited with error code.\n"
    'See "systemctl status kubelet.service" and "journalctl -xeu kubelet.service" for details.\n'
)
# major numbers as a typical host assigns them (195 = nvidia, the uvm major is dynamic)
_DEV_NUMBERS = {"nvidiactl": (195, 255), "nvidia-modeset": (195, 254), "nvidia-uvm": (510, 0)}
_DEV_NUMBERS["nvidia-uvm-tools"] = (510, 1)


@dataclass(frozen=True)
class CommandRecord:
    """One command a client ran on a simulated node."""

    node: str
    command: str
    exit_status: int
    #: False when the command is not in the node's table (the bot should never send it)
    allowed: bool
    #: how it arrived: "ssh", "agent" (exec into the read-only agent), "actuator" (exec, nsenter)
    via: str = "ssh"


@dataclass(frozen=True)
class _Answer:
    """What a simulated node answers to one command, and whether the command was allowed and
    changes the node, so tests can prove that probes only read."""

    stdout: str
    stderr: str
    exit_status: int
    allowed: bool = True
    changes_state: bool = False


class _NodeServer(asyncssh.SSHServer):
    """Key-only authentication for one node; ``deny`` rejects every key (``auth-denied``)."""

    def __init__(self, fleet: SshFleet, client_key: bytes, deny: bool) -> None:
        self._fleet = fleet
        self._client_key = client_key
        self._deny = deny

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._fleet._connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fleet._connections = {c for c in self._fleet._connections if not c.is_closed()}

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return not self._deny and username == self._fleet.user and key.public_data == self._client_key


def _iso_to_ls(mtime: str) -> str:
    """Scenario time (ISO 8601, Z) -> ``ls --time-style=full-iso`` text."""
    try:
        stamp = datetime.fromisoformat(mtime.replace("Z", "+00:00"))
    except ValueError:
        stamp = datetime(2026, 1, 1, tzinfo=UTC)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond * 1000:09d} " + stamp.strftime("%z")


def render_ls(devs: list[DevFile]) -> str:
    """``ls -l --time-style=full-iso /dev/nvidia*`` for the given device files."""
    lines = []
    for dev in sorted(devs, key=lambda d: d.name):
        match = re.fullmatch(r"nvidia(\d+)", dev.name)
        major, minor = (195, int(match.group(1))) if match else _DEV_NUMBERS.get(dev.name, (195, 0))
        lines.append(f"crw-rw-rw- 1 root root {major}, {minor:>3} {_iso_to_ls(dev.mtime)} /dev/{dev.name}\n")
    return "".join(lines)


class SshFleet:
    """All simulated nodes of a scenario, each behind its own SSH server."""

    def __init__(self, scenario: Scenario, workdir: Path) -> None:
        self.scenario = scenario
        self.workdir = Path(workdir)
        self.user = "gpubot"
        self.targets: dict[str, tuple[str, int]] = {}
        self.known_hosts_path = self.workdir / "known_hosts"
        self.client_key_path = self.workdir / "id_ed25519"
        self.command_log: list[CommandRecord] = []
        # a private copy: actions mutate node state, and the scenario may be shared with the API sim
        self._nodes: dict[str, NodeFacts] = {n: copy.deepcopy(f) for n, f in scenario.nodes.items()}
        self._history: dict[str, list[str]] = {n: [] for n in self._nodes}
        self._backups: dict[str, dict[str, str]] = {n: {} for n in self._nodes}
        self._registered: dict[str, dict[str, object]] = {}
        self._acceptors: list[asyncssh.SSHAcceptor] = []
        self._connections: set[asyncssh.SSHServerConnection] = set()
        self._tcp_servers: list[asyncio.Server] = []
        self._hung: set[asyncio.StreamWriter] = set()
        self._reserved: list[socket.socket] = []
        self.keys: FleetKeys | None = None
        #: told ``(node, kubelet state)`` after every kubelet stop/start/restart (the API's node lifecycle)
        self.on_kubelet: Callable[[str, str], None] | None = None
        #: (node, command or prefix, is a prefix) -> how many more times the connection drops
        #: right after such a command ran
        self._drops: dict[tuple[str, str, bool], int] = {}
        #: keep each node's answer to the combined read until a command changes the node: for the
        #: benchmarks (bench.simproc), whose nodes never change otherwise. Each real node renders
        #: its nvidia-smi output on its own CPU, in parallel with every other node; here one process
        #: renders them all on the cores the bot is measured on (a third of the simulator's CPU in
        #: a 500-node fan-out). The node's latency still applies to every read. Off for tests,
        #: which change node facts in place.
        self.keep_combined = False
        self._kept: dict[tuple[str, str], tuple[_Answer, list[CommandRecord]]] = {}

    async def __aenter__(self) -> SshFleet:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        wrong = [n for n, f in self._nodes.items() if f.ssh == "wrong-host-key"]
        self.keys = keys = generate_keys(self._nodes, wrong_host_key=wrong)
        client_public = keys.client.public_data
        for name, facts in self._nodes.items():
            if facts.ssh == "unreachable":
                port = self._reserve_refusing_port()
            elif facts.ssh == "timeout":
                server = await asyncio.start_server(self._hang, HOST, 0)
                self._tcp_servers.append(server)
                port = server.sockets[0].getsockname()[1]
            else:
                deny = facts.ssh == "auth-denied"

                def factory(deny: bool = deny) -> asyncssh.SSHServer:
                    return _NodeServer(self, client_public, deny)

                async def process_factory(process: asyncssh.SSHServerProcess[str], node: str = name) -> None:
                    await self._serve(node, process)

                acceptor = await asyncssh.create_server(
                    factory,
                    HOST,
                    0,
                    server_host_keys=[keys.nodes[name].presented],
                    process_factory=process_factory,
                    encoding="utf-8",
                    agent_forwarding=False,
                    allow_scp=False,
                    sftp_factory=None,
                    x11_forwarding=False,
                )
                self._acceptors.append(acceptor)
                port = acceptor.get_port()
            self.targets[name] = (HOST, port)
        self.client_key_path, self.known_hosts_path = write_client_files(self.workdir, keys, self.targets)

    def _reserve_refusing_port(self) -> int:
        """A port that refuses connections and that nobody else can take while the fleet runs.

        A bound socket that never listens answers every SYN with a reset (ECONNREFUSED).
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((HOST, 0))
        self._reserved.append(sock)
        port: int = sock.getsockname()[1]
        return port

    async def _hang(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Accept and never send a byte, like a node whose sshd is wedged."""
        self._hung.add(writer)
        try:
            while await reader.read(4096):
                pass
        except ConnectionError:
            pass
        finally:
            self._hung.discard(writer)
            writer.close()

    async def stop(self) -> None:
        for acceptor in self._acceptors:
            acceptor.close()
        for conn in list(self._connections):
            conn.close()
        for writer in list(self._hung):
            writer.close()
        for server in self._tcp_servers:
            server.close()
        for acceptor in self._acceptors:
            await acceptor.wait_closed()
        for server in self._tcp_servers:
            await server.wait_closed()
        for sock in self._reserved:
            sock.close()
        self._acceptors.clear()
        self._tcp_servers.clear()
        self._reserved.clear()
        self._connections.clear()

    # -- state seen by tests and the API simulator ----------------------------------------

    def state(self, node: str) -> NodeFacts:
        """The live, mutable facts of ``node`` (kubelet state, checkpoint text, ...)."""
        return self._nodes[node]

    def history(self, node: str) -> list[str]:
        """State-changing commands run on ``node``, in order (failed ones included)."""
        return list(self._history[node])

    def backups(self, node: str) -> dict[str, str]:
        """Backup path -> checkpoint text moved there."""
        return dict(self._backups[node])

    def drop_connection_after(self, node: str, command: str, *, times: int = 1, prefix: bool = False) -> None:
        """Fault: the next ``times`` runs of ``command`` on ``node`` (or of any command starting
        with it, ``prefix``) take effect, then the node drops the connection before sending the
        exit status (a network blip right after the command)."""
        self._drops[(node, command, prefix)] = times

    def _drop_now(self, node: str, command: str) -> bool:
        for (n, match, prefix), left in self._drops.items():
            if n == node and left > 0 and (command.startswith(match) if prefix else command == match):
                self._drops[(n, match, prefix)] = left - 1
                return True
        return False

    def ssh_targets_setting(self) -> dict[str, str]:
        """node -> "host:port", the shape of ``ClusterConfig.ssh_targets``."""
        return {n: f"{h}:{p}" for n, (h, p) in self.targets.items()}

    # -- commands -------------------------------------------------------------------------

    async def _serve(self, node: str, process: asyncssh.SSHServerProcess[str]) -> None:
        command = process.command
        try:
            if command is None:
                answer = _Answer("", "this node serves commands only, not a shell\n", 1, allowed=False)
                self.command_log.append(CommandRecord(node, "", answer.exit_status, answer.allowed))
                dropped = False
            else:
                answer, dropped = await self._run(node, command, "ssh")
            if dropped:
                process.get_extra_info("connection").abort()
                return
            process.stdout.write(answer.stdout)
            process.stderr.write(answer.stderr)
            process.exit(answer.exit_status)
        except (OSError, asyncssh.Error):
            process.close()

    def execute(self, node: str, command: str, via: str = "ssh") -> _Answer:
        """Answer one command line from the node's facts (also usable without SSH)."""
        if command == COMBINED_READ:
            return self._combined(node, via)
        answer = self._answer(self._nodes[node], node, command)
        if answer.changes_state:
            self._history[node].append(command)
            self._forget(node)
        return answer

    def _forget(self, node: str) -> None:
        """The node changed: its kept combined answers are stale."""
        for via in ("ssh", "agent"):
            self._kept.pop((node, via), None)

    async def _run(self, node: str, command: str, via: str) -> tuple[_Answer, bool]:
        """After the node's latency, answer and apply one command and log it; True when an armed
        drop fault fires after it."""
        latency_ms = self._nodes[node].latency_ms
        if latency_ms > 0:
            await asyncio.sleep(latency_ms / 1000)
        answer = self.execute(node, command, via)
        if command != COMBINED_READ:  # its parts are logged one by one
            self.command_log.append(CommandRecord(node, command, answer.exit_status, answer.allowed, via))
        return answer, self._drop_now(node, command)

    async def actuate(self, node: str, command: str) -> tuple[str, str, int, bool]:
        """A command the node's gpubot-actuator runs in the host (``nsenter``): answered, applied
        and logged exactly as over SSH (the same state, ``history`` and ``drop_connection_after``
        fault); the last value is True when that fault cuts the exec stream after it ran. Only
        the actuator's list runs; anything else exits 127 as a shell would, logged as not allowed."""
        if node not in self._nodes:
            return "", f"nsenter: no host for node {node}\n", 1, False
        if command not in _ACTUATOR_LINES and not _MV.fullmatch(command):
            self.command_log.append(CommandRecord(node, command, 127, allowed=False, via="actuator"))
            return "", f"sh: 1: {command.split(' ', 1)[0]}: not found\n", 127, False
        answer, dropped = await self._run(node, command, "actuator")
        return answer.stdout, answer.stderr, answer.exit_status, dropped

    async def read(self, node: str, command: str) -> tuple[str, str, int]:
        """A node read as the node agent runs it: the SSH answer for a read command; a command
        that would change the node fails (the agent's mounts are read-only and it has no systemd).
        The node's latency applies as over SSH: it stands for the command's own run time on the
        node (nvidia-smi takes as long in the agent's container) as well as the network."""
        if (command not in READ_COMMANDS and command not in AGENT_READ_COMMANDS) or node not in self._nodes:
            return "", f"sh: {command.split(' ', 1)[0]}: not permitted in the read-only agent\n", 126
        latency_ms = self._nodes[node].latency_ms
        if latency_ms > 0:
            await asyncio.sleep(latency_ms / 1000)
        if command == COMBINED_READ:
            combined = self._combined(node, "agent")
            return combined.stdout, combined.stderr, combined.exit_status
        answer = self._agent_answer(self._nodes[node], node, command)
        self.command_log.append(CommandRecord(node, command, answer.exit_status, answer.allowed, "agent"))
        return answer.stdout, answer.stderr, answer.exit_status

    def _agent_answer(self, facts: NodeFacts, node: str, command: str) -> _Answer:
        """A read as the agent's container runs it: without the host's systemd when the scenario
        says so (``agent_systemd: false``), the systemctl of a container with no systemd as PID 1."""
        if command == KUBELET_ACTIVE and not facts.agent_systemd:
            return _Answer("", NO_SYSTEMD, 1)
        own = agent_read(facts, node, command, kernel_lines)
        if own is not None:
            return _Answer(*own)
        return self._answer(facts, node, command)

    def _combined(self, node: str, via: str) -> _Answer:
        """The combined first read as a shell runs it: each part answered and logged as its own
        command, their outputs framed as ``COMBINED_READ`` prints them."""
        kept = self._kept.get((node, via)) if self.keep_combined else None
        if kept is None:
            kept = self._render_combined(node, via)
            if self.keep_combined:
                self._kept[(node, via)] = kept
        answer, records = kept
        self.command_log.extend(records)
        return answer

    def _render_combined(self, node: str, via: str) -> tuple[_Answer, list[CommandRecord]]:
        parts, records = [], []
        for command in FIRST_READS:
            facts = self._nodes[node]
            answer = self._agent_answer(facts, node, command) if via == "agent" else self._answer(facts, node, command)
            records.append(CommandRecord(node, command, answer.exit_status, answer.allowed, via))
            parts.append((answer.stdout, answer.stderr, answer.exit_status))
        return _Answer(frame_reads(parts), "", 0), records

    def _answer(self, facts: NodeFacts, node: str, command: str) -> _Answer:
        words = command.split()
        if not words:
            return _Answer("", "", 0, allowed=False)
        if not _SHELL_META.isdisjoint(command):
            return _not_found(words[0])
        line = " ".join(words)
        if words[0] == "nvidia-smi":
            if facts.driver_install == "operator":
                return _Answer("", "bash: nvidia-smi: command not found\n", 127)
            return _Answer(*render(words[1:], facts.gpus, facts.processes, facts.driver, facts.cuda))
        if words[:3] == ["chroot", DRIVER_ROOT, "nvidia-smi"]:
            if facts.driver_install != "operator":
                msg = f"chroot: cannot change root directory to '{DRIVER_ROOT}': No such file or directory\n"
                return _Answer("", msg, 125)
            return _Answer(*render(words[3:], facts.gpus, facts.processes, facts.driver, facts.cuda))
        if line == f"cat {CHECKPOINT}":
            if facts.checkpoint is None:
                return _Answer("", f"cat: {CHECKPOINT}: No such file or directory\n", 1)
            return _Answer(facts.checkpoint, "", 0)
        match = _CAT_BACKUP.fullmatch(line)
        if match:
            text = self._backups[node].get(match.group("path"))
            if text is None:
                return _Answer("", f"cat: {match.group('path')}: No such file or directory\n", 1)
            return _Answer(text, "", 0)
        if line == "ls -l --time-style=full-iso /dev/nvidia*":
            if not facts.dev_nvidia:
                return _Answer("", "ls: cannot access '/dev/nvidia*': No such file or directory\n", 2)
            return _Answer(render_ls(facts.dev_nvidia), "", 0)
        if line == "cat /proc/driver/nvidia/version":
            if not facts.driver:
                return _Answer("", "cat: /proc/driver/nvidia/version: No such file or directory\n", 1)
            return _Answer(
                f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {facts.driver}  "
                "Thu Oct 10 19:11:32 UTC 2024\n"
                "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n",
                "",
                0,
            )
        if line == "journalctl -k --no-pager -o short-iso --grep=NVRM -n 2000":
            return _journal(facts, node)
        if line == "dmesg --ctime --level=err,warn":
            return _dmesg(facts)
        if line == "systemctl is-active kubelet":
            return _Answer(facts.kubelet + "\n", "", 0 if facts.kubelet == "active" else 3)
        if line in ("systemctl stop kubelet", "systemctl start kubelet", "systemctl restart kubelet"):
            return self._kubelet(facts, node, words[1])
        match = _MV.fullmatch(line)
        if match:
            return self._move_checkpoint(facts, node, match.group("dest"))
        return _not_found(words[0])

    def _kubelet(self, facts: NodeFacts, node: str, verb: str) -> _Answer:
        answer = self._kubelet_verb(facts, node, verb)
        if self.on_kubelet is not None:
            self.on_kubelet(node, facts.kubelet)
        return answer

    def _kubelet_verb(self, facts: NodeFacts, node: str, verb: str) -> _Answer:
        if verb == "stop":
            facts.kubelet = "inactive"
            return _Answer("", "", 0, changes_state=True)
        if facts.kubelet_fails_start:
            facts.kubelet = "failed"
            return _Answer("", _KUBELET_FAILED, 1, changes_state=True)
        facts.kubelet = "active"
        if facts.checkpoint is None:
            # a starting kubelet writes a fresh checkpoint: registrations survive, allocations do not
            registered = self._registered.get(node, {})
            body = {"Data": {"PodDeviceEntries": None, "RegisteredDevices": registered}, "Checksum": 1}
            facts.checkpoint = json.dumps(body, separators=(",", ":")) + "\n"
        return _Answer("", "", 0, changes_state=True)

    def _move_checkpoint(self, facts: NodeFacts, node: str, dest: str) -> _Answer:
        if facts.checkpoint is None:
            return _Answer(
                "", f"mv: cannot stat '{CHECKPOINT}': No such file or directory\n", 1, changes_state=True
            )
        self._registered[node] = _registered_devices(facts.checkpoint)
        self._backups[node][dest] = facts.checkpoint
        facts.checkpoint = None
        return _Answer("", "", 0, changes_state=True)


def _stamp(text: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        stamp = datetime(2026, 1, 1, tzinfo=UTC)
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def kernel_lines(facts: NodeFacts) -> list[tuple[datetime, str]]:
    """The node's kernel messages, oldest first: boot lines, the scenario's lines, its Xids."""
    lines = list(facts.kernel_log)
    if not lines:
        lines = [
            KernelLine("2026-01-01T00:00:01Z", "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) "
                       "(gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0) #115-Ubuntu SMP"),
            KernelLine("2026-01-01T00:00:09Z", "ACPI: PCI Root Bridge [PCI0] (domain 0000 [bus 00-ff])"),
        ]
        if facts.driver:
            lines.append(KernelLine("2026-01-01T00:00:21Z", "nvidia: module license 'NVIDIA' taints kernel."))
            lines.append(KernelLine("2026-01-01T00:00:21Z", f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  "
                                    f"{facts.driver}  Thu Oct 10 19:11:32 UTC 2024"))
            uvm = "nvidia-uvm: Loaded the UVM driver, major device number 510."
            lines.append(KernelLine("2026-01-01T00:00:22Z", uvm))
    out = [(_stamp(k.time), k.text) for k in lines]
    for x in facts.xid:
        name = f", name={x.name}" if x.name else ""
        pid = x.pid if x.pid.isdigit() else f"'{x.pid}'"
        out.append((_stamp(x.time), f"NVRM: Xid (PCI:{x.pci}): {x.xid}, pid={pid}{name}, {x.text}".rstrip(", ")))
    out.sort(key=lambda item: item[0])
    return out


def _journal(facts: NodeFacts, node: str) -> _Answer:
    """``journalctl -k -o short-iso --grep=NVRM``: ``TIME HOST kernel: MESSAGE`` lines with NVRM in
    them; 127 where journalctl is missing."""
    if facts.kernel_log_source == "dmesg":
        return _Answer("", "bash: journalctl: command not found\n", 127)
    if facts.kernel_log_source == "none":
        return _Answer("", "No journal files were opened due to insufficient permissions.\n", 1)
    host = node.split(".")[0]
    lines = [(t, text) for t, text in kernel_lines(facts) if "NVRM" in text][-2000:]
    if not lines:
        return _Answer("-- No entries --\n", "", 0)
    body = "".join(f"{t.strftime('%Y-%m-%dT%H:%M:%S%z')} {host} kernel: {text}\n" for t, text in lines)
    return _Answer(body, "", 0)


def _dmesg(facts: NodeFacts) -> _Answer:
    """``dmesg --ctime``: ``[Www Mmm dd HH:MM:SS YYYY] MESSAGE``; refused where the ring is restricted."""
    if facts.kernel_log_source == "none":
        return _Answer("", "dmesg: read kernel buffer failed: Operation not permitted\n", 1)
    body = "".join(f"[{t.strftime('%a %b %e %H:%M:%S %Y')}] {text}\n" for t, text in kernel_lines(facts))
    return _Answer(body, "", 0)


def _not_found(word: str) -> _Answer:
    return _Answer("", f"bash: {word}: command not found\n", 127, allowed=False)


def _registered_devices(text: str) -> dict[str, object]:
    try:
        data = json.loads(text)
        registered = data["Data"]["RegisteredDevices"]
    except (ValueError, KeyError, TypeError):
        return {}
    return registered if isinstance(registered, dict) else {}
