"""Write a kubeconfig that points kubectl and the official client at the simulator.

Plain HTTP with a bearer token: the simulator accepts any token and serves no TLS. This writes
only the file it is given; it never touches ``~/.kube/config``.

The file is JSON, which is YAML to every kubeconfig reader (kubectl, the official client): every
simulator writes one, and PyYAML's pure-Python emitter took longer than starting the API server.
"""

from __future__ import annotations

import json
from pathlib import Path


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
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path
