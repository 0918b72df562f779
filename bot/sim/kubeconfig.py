"""Write a kubeconfig that points kubectl and the official client at the simulator.

Plain HTTP with a bearer token: the simulator accepts any token and serves no TLS. This writes
only the file it is given; it never touches ``~/.kube/config``.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def write_kubeconfig(path: Path, server_url: str, *, context: str = "sim", token: str = "sim-token") -> Path:  # noqa: S107
    """Write a one-context kubeconfig at ``path`` and return the path."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server_url}}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "preferences": {},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path
