"""The node reads' SSH cipher: AES-GCM where the node offers it, the defaults where it does not.

Every node read runs on the bot's one event loop and asyncssh seals a ChaCha20-Poly1305 packet in
several Python-level calls, so the client asks for AES-GCM first (``ENCRYPTION_ALGS``). A node
whose sshd offers only ChaCha20 (a hardened config) must still be read.
"""

from __future__ import annotations

from pathlib import Path

import asyncssh

from bot.probes.ssh import ENCRYPTION_ALGS, READ_COMMANDS, SshTarget, open_connection, run_command
from tests.conftest import StartFleet
from tests.probes import many_nodes, targets_of


async def test_a_node_read_negotiates_aes_gcm(start_fleet: StartFleet) -> None:
    fleet = await start_fleet(many_nodes(1))
    conn = await open_connection(targets_of(fleet)["node-000"], timeout=5)
    async with conn:
        assert conn.get_extra_info("send_cipher") == "aes128-gcm@openssh.com"
        assert conn.get_extra_info("recv_cipher") == "aes128-gcm@openssh.com"
        result = await run_command(conn, "systemctl is-active kubelet", allowed=READ_COMMANDS)
    assert result.exit_status == 0


def _answer(process: asyncssh.SSHServerProcess) -> None:
    process.stdout.write("active\n")
    process.exit(0)


class _Server(asyncssh.SSHServer):  # type: ignore[misc]
    def __init__(self, client_key: asyncssh.SSHKey) -> None:
        self._client_key = client_key

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key.public_data == self._client_key.public_data


async def test_a_node_offering_only_chacha20_is_still_read(tmp_path: Path) -> None:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = tmp_path / "id_ed25519"
    client_key.write_private_key(str(key_path))
    server = await asyncssh.create_server(
        lambda: _Server(client_key),
        "127.0.0.1",
        0,
        server_host_keys=[host_key],
        encryption_algs=["chacha20-poly1305@openssh.com"],
        process_factory=_answer,
    )
    port = server.sockets[0].getsockname()[1]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_key.export_public_key().decode().strip()}\n")
    target = SshTarget("node-x", "127.0.0.1", port, "root", str(key_path), str(known))
    try:
        conn = await open_connection(target, timeout=5)
        async with conn:
            assert conn.get_extra_info("send_cipher") == "chacha20-poly1305@openssh.com"
            result = await run_command(conn, "systemctl is-active kubelet", allowed=READ_COMMANDS)
        assert (result.stdout, result.exit_status) == ("active\n", 0)
    finally:
        server.close()
        await server.wait_closed()
    assert "chacha20-poly1305@openssh.com" in ENCRYPTION_ALGS
