"""The kubelet's liveness from its Lease and the Ready condition (bot/kube/kubelet.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.kube.kubelet import SYSTEMD_STATES, kubelet_liveness

NOW = datetime(2026, 5, 7, 10, 20, tzinfo=UTC)


def _lease(age_s: float | None, duration: int | None = 40) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": "gpu-1"}
    if age_s is not None:
        spec["renewTime"] = (NOW - timedelta(seconds=age_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    return {"metadata": {"name": "gpu-1", "namespace": "kube-node-lease"}, "spec": spec}


def _node(ready: str | None) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": "gpu-1"}, "status": {"conditions": conditions}}


@pytest.mark.parametrize(
    ("lease", "ready", "state"),
    [
        (_lease(5), "True", "active"),
        (_lease(39), "True", "active"),
        (_lease(120), "True", "not heartbeating"),  # Ready not yet turned Unknown: the Lease says more
        (_lease(5), "Unknown", "not heartbeating"),
        (_lease(5), None, "not heartbeating"),
        (_lease(50, duration=None), "True", "not heartbeating"),  # the kubelet's default 40 s
        (_lease(None), "True", "not heartbeating"),
        (None, "True", "not heartbeating"),
    ],
)
def test_liveness(lease: dict[str, Any] | None, ready: str | None, state: str) -> None:
    live = kubelet_liveness(lease, _node(ready), NOW)
    assert live.state == state
    assert live.state not in SYSTEMD_STATES - {"active"}, "never a systemd word systemd did not say"
    assert "Ready" in live.evidence


def test_the_evidence_names_the_lease_and_its_age() -> None:
    live = kubelet_liveness(_lease(12), _node("True"), NOW)
    assert live.evidence == "kubelet heartbeating: Lease kube-node-lease/gpu-1 renewed 12s ago, Ready True"
