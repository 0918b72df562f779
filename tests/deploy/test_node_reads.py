"""Every command the node agent runs touches only what the chart gives it (bot/probes/node_reads.py).

The table is checked against the commands themselves (every path a command names is declared,
every read command has an entry), the chart (every host path of a ``mounted`` read sits under a
read-only hostPath mount of the gpubot-node DaemonSet at the same path; ``runtime`` reads have the
RuntimeClass; the agent holds no capability a read would need), and the code (what stands in for a
``host-only`` read exists). docs/node-reads.md names every read.
"""

from __future__ import annotations

import importlib
import posixpath
import re
from pathlib import Path

from bot.agent.driver import roots_from_env
from bot.agent.kernel_log import parse_sources
from bot.probes.agent_reads import AGENT_READ_COMMANDS
from bot.probes.node_reads import BY_COMMAND, NODE_READS
from bot.probes.ssh import COMBINED_READ, FIRST_READS, READ_COMMANDS, split_reads
from tests.deploy.render import Obj, one, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "node-reads.md"
#: an absolute path in a command (a glob ends it as the command has it)
_PATH = re.compile(r"(?<![\w=])(/[\w.\-/]+\*?)")


def _mounts(daemonset: Obj, *, same_path: bool = True) -> dict[str, bool]:
    """mount path -> read-only, for every hostPath the agent container mounts (at its host path
    unless ``same_path`` is False)."""
    spec = daemonset["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    (container,) = spec["containers"]
    return {
        m["mountPath"]: bool(m.get("readOnly"))
        for m in container["volumeMounts"]
        if "hostPath" in volumes[m["name"]]
        and (not same_path or volumes[m["name"]]["hostPath"]["path"] == m["mountPath"])
    }


def _under(path: str, mounts: dict[str, bool]) -> bool:
    path = path.rstrip("*")
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)


def test_the_table_covers_every_read_command() -> None:
    assert set(BY_COMMAND) == (READ_COMMANDS | AGENT_READ_COMMANDS) - {COMBINED_READ}
    assert len(BY_COMMAND) == len(NODE_READS)
    assert split_reads("") is None and set(FIRST_READS) <= set(BY_COMMAND)


def test_every_path_a_command_names_is_declared() -> None:
    for read in NODE_READS:
        named = set(_PATH.findall(read.command))
        assert named <= set(read.paths), f"{read.command!r} names {named - set(read.paths)} the table does not declare"
        assert read.command.split()[0] in read.binaries, read.command


def test_every_agent_read_touches_only_what_the_chart_mounts() -> None:
    daemonset = one(render(), "DaemonSet", "gpubot-node")
    mounts = _mounts(daemonset)
    assert mounts and all(mounts.values()), f"every host mount read-only: {mounts}"
    spec = daemonset["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = {e["name"]: e.get("value", "") for e in container.get("env") or []}
    dropped = container["securityContext"]["capabilities"]["drop"]
    for read in NODE_READS:
        if read.agent == "mounted":
            missing = [p for p in read.paths if not _under(p, mounts)]
            assert not missing, f"{read.command!r} reads {missing}, which the agent does not mount"
            assert not read.capabilities, read.command
        elif read.agent == "runtime":
            assert spec.get("runtimeClassName") and "utility" in env["NVIDIA_DRIVER_CAPABILITIES"], read.command
            assert not read.paths, f"{read.command!r}: the runtime brings the binary, not a host path"
        elif read.agent == "agent-only":
            assert read.command.startswith("python -m bot.agent "), read.command
            assert not read.capabilities, read.command
        elif read.agent == "own":
            assert all(posixpath.commonpath([p, "/proc"]) == "/proc" for p in read.paths), read.command
        else:
            # what the agent cannot do: it has no capability and no mount for it, and something stands in
            assert dropped == ["ALL"] and not container["securityContext"].get("privileged")
            assert read.instead, f"{read.command!r} is host-only: say what the agent does instead"
            if read.instead.startswith("bot."):
                importlib.import_module(read.instead)


def test_the_docs_name_every_read() -> None:
    text = DOC.read_text(encoding="utf-8")
    for read in NODE_READS:
        assert f"`{read.command}`" in text, f"docs/node-reads.md does not name {read.command!r}"
    for distribution in ("Ubuntu", "Amazon Linux 2023", "Bottlerocket", "Container-Optimized OS", "RHCOS"):
        assert distribution in text


#: a GKE-like agent with a second driver root (the GPU Operator's), as deploy/README.md shows
_OPERATOR_ROOT = {"path": "/run/nvidia/driver", "bin": "usr/bin", "lib": "usr/lib64"}
_DRIVERS = {"nodeAgent": {"runtimeClassName": "", "hostDriver": {
    "path": "/home/kubernetes/bin/nvidia", "roots": [_OPERATOR_ROOT]}}}


def test_the_agents_own_reads_read_only_what_the_chart_mounts_for_them() -> None:
    """The environment the chart gives the agent, read by the agent's own parsers, names only
    read-only host mounts: every kernel-log source sits under the log mount, every driver root is
    a mount of the host directory it claims."""
    daemonset = one(render(_DRIVERS), "DaemonSet", "gpubot-node")
    spec = daemonset["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = {e["name"]: e.get("value", "") for e in container["env"]}
    mounts = _mounts(daemonset, same_path=False)
    assert all(mounts.values()), mounts
    sources = parse_sources(env["GPUBOT_KERNEL_LOG_SOURCES"])
    assert sources == [("journal", "/var/log/journal"), ("file", "/var/log/kern.log"), ("file", "/var/log/messages"),
                       ("file", "/var/log/syslog")]
    assert all(_under(path, _mounts(daemonset)) for _, path in sources)
    volumes = {v["name"]: v for v in spec["volumes"]}
    by_mount = {m["mountPath"]: volumes[m["name"]]["hostPath"]["path"] for m in container["volumeMounts"]
                if "hostPath" in volumes[m["name"]]}
    roots = roots_from_env(env["GPUBOT_DRIVER_ROOTS"])
    assert [(r.host, r.bin, r.lib) for r in roots] == [("/home/kubernetes/bin/nvidia", "bin", "lib64"),
                                                       ("/run/nvidia/driver", "usr/bin", "usr/lib64")]
    for root in roots:
        assert by_mount[root.mount] == root.host and mounts[root.mount]
    read = BY_COMMAND["python -m bot.agent nvidia-smi gpu"]
    assert all(_under(p, {r.mount: True for r in roots}) or p == "/host-driver" for p in read.paths)


def test_without_a_log_mount_the_agent_gets_no_kernel_log_sources() -> None:
    daemonset = one(render({"nodeAgent": {"kernelLog": {"hostPath": "", "sources": ["journal"]}}}),
                    "DaemonSet", "gpubot-node")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    assert "GPUBOT_KERNEL_LOG_SOURCES" not in {e["name"] for e in container["env"]}
    assert "/var/log" not in _mounts(daemonset)
