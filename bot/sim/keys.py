"""SSH keys for the simulated fleet: one host key per node, one client key, a known_hosts file.

The simulator's nodes must be checked as strictly as real ones, so the client side gets a real
known_hosts file with one ``[127.0.0.1]:PORT`` line per node. A ``wrong-host-key`` node is
written into known_hosts with a different key than the one its server presents, which is what a
reinstalled or impersonated node looks like. Keys are generated fresh for every fleet and live
only in its work directory; this module must never read or write anything outside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import asyncssh

KEY_ALG = "ssh-ed25519"


@dataclass(frozen=True)
class NodeKeys:
    """The key a node's server presents, and the key known_hosts says it should present."""

    presented: asyncssh.SSHKey
    known: asyncssh.SSHKey


@dataclass(frozen=True)
class FleetKeys:
    """The client key and every simulated node's host keys, generated per run so no key lives in the
    repository."""

    client: asyncssh.SSHKey
    nodes: Mapping[str, NodeKeys]


def generate_keys(node_names: Iterable[str], *, wrong_host_key: Iterable[str] = ()) -> FleetKeys:
    """Fresh keys; nodes in ``wrong_host_key`` get a known_hosts key that does not match."""
    wrong = set(wrong_host_key)
    nodes = {}
    for name in node_names:
        presented = asyncssh.generate_private_key(KEY_ALG)
        known = asyncssh.generate_private_key(KEY_ALG) if name in wrong else presented
        nodes[name] = NodeKeys(presented=presented, known=known)
    return FleetKeys(client=asyncssh.generate_private_key(KEY_ALG), nodes=nodes)


def _write_private(path: Path, data: bytes) -> None:
    # 0600 from the start: ssh clients refuse (and a reader should never see) a readable key
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_client_files(
    workdir: Path, keys: FleetKeys, endpoints: Mapping[str, tuple[str, int]]
) -> tuple[Path, Path]:
    """Write the client key and known_hosts; returns ``(client_key_path, known_hosts_path)``.

    ``endpoints`` maps node -> (host, port) as the client will dial it.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    key_path = workdir / "id_ed25519"
    _write_private(key_path, keys.client.export_private_key("openssh"))
    (workdir / "id_ed25519.pub").write_bytes(keys.client.export_public_key("openssh"))
    lines = []
    for node, (host, port) in endpoints.items():
        pattern = host if port == 22 else f"[{host}]:{port}"
        public = keys.nodes[node].known.export_public_key("openssh").decode().strip()
        algorithm, blob = public.split()[:2]
        lines.append(f"{pattern} {algorithm} {blob}\n")
    known_hosts = workdir / "known_hosts"
    known_hosts.write_text("".join(lines), encoding="utf-8")
    return key_path, known_hosts
