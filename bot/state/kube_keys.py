"""Keys that expire, on the Kubernetes API: Slack retry de-duplication shared by every replica.

A key is one ``GpuKey`` object named by the key's hash; ``first(key)`` creates it, and the API
server's 409 AlreadyExists answers "another replica saw it first" atomically. A key lives
``ttl_s`` after its ``creationTimestamp`` by the server's clock: an expired key found in the way
is deleted (at the version read, so a fresh one is never removed) and the create tried again;
``sweep`` deletes every expired key of its kind, and the leader runs it with the offer sweep so
the objects do not pile up. ``kind`` separates uses (``slack-request``, ``problem``) in one
namespace; the key text itself is never stored, only its hash.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from bot.errors import NotFoundError
from bot.state.kube import API_VERSION, KEYS, Conflict, KubeState, created_at, hashed_name

_KIND_LABEL = "gpubot.dev/key-kind"


class KubeKeys:
    """``SharedKeys`` (``bot.slack.dedupe``) on ``GpuKey`` objects: ``first(key)`` once per TTL."""

    def __init__(self, state: KubeState, *, kind: str = "slack-request", ttl_s: float = 600.0) -> None:
        self.state = state
        self.kind = kind
        self.ttl_s = ttl_s

    def _expired(self, obj: dict[str, Any]) -> bool:
        ttl = float((obj.get("spec") or {}).get("ttlSeconds", self.ttl_s))
        return created_at(obj) + timedelta(seconds=ttl) <= self.state.server_time()

    def first(self, key: str) -> bool:
        name = hashed_name(f"k-{self.kind}", key)
        body = {
            "apiVersion": API_VERSION,
            "kind": "GpuKey",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpubot", _KIND_LABEL: self.kind}},
            "spec": {"kind": self.kind, "ttlSeconds": int(self.ttl_s)},
        }
        for _ in range(3):
            try:
                self.state.create(KEYS, body)
                return True
            except Conflict:
                pass
            try:
                existing = self.state.get(KEYS, name)
            except NotFoundError:
                continue  # swept in between: try the create again
            if not self._expired(existing):
                return False
            self.state.delete(KEYS, name, str(existing["metadata"].get("resourceVersion", "")) or None)
        return False

    def sweep(self) -> int:
        """Delete every expired key of this kind; how many went."""
        gone = 0
        for obj in self.state.list_all(KEYS, label_selector=f"{_KIND_LABEL}={self.kind}"):
            if self._expired(obj):
                try:
                    self.state.delete(KEYS, obj["metadata"]["name"], str(obj["metadata"].get("resourceVersion", "")))
                    gone += 1
                except Conflict:
                    continue  # renewed since the list: not expired any more
        return gone

    def close(self) -> None:
        """Nothing to release: the API connection belongs to the caller."""
