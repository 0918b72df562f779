"""HAMi and tkestack vGPU objects read from plain dicts: handshake, registration, webhook labels."""

from __future__ import annotations

from typing import Any

import pytest

from bot.kube.vgpu import (
    HAMI_HANDSHAKE,
    HAMI_REGISTER,
    flag_value,
    hami_pod_handled,
    node_registration,
    parse_handshake,
    parse_registration,
    vcuda_predicated,
    webhook_ignored,
)

#: the pre-2.5 encoding, as HAMi issue #314 shows it
LEGACY = ("GPU-b7c4eb59-dd76-ca5a-8482-56fd796b0a75,10,40960,100,NVIDIA-NVIDIA A100-PCIE-40GB,0,true:"
          "GPU-ec7d894f-bb24-dc73-1adb-17806ec68749,10,40960,100,NVIDIA-NVIDIA A100-PCIE-40GB,0,false:")
#: 2.5+ JSON, as HAMi issue #2036 shows it
JSON = ('[{"id":"GPU-4b3fb0e5-0e84-ada9-b83f-a8a2c757fd28","index":4,"count":10,"devmem":23028,"devcore":100,'
        '"type":"NVIDIA-NVIDIA GeForce RTX 4090","mode":"hami-core","health":true}]')


def _node(annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n", "annotations": annotations or {}}}


@pytest.mark.parametrize(
    "value,state,when",
    [
        ("Requesting_2025-08-07 11:28:25", "requesting", "2025-08-07 11:28:25"),
        ("Requesting_2024.05.20 11:44:46", "requesting", "2024.05.20 11:44:46"),
        ("Deleted_2025-08-03 19:32:07", "deleted", "2025-08-03 19:32:07"),
        ("Reported 2024-08-14 11:19:02.953065957 +0000 UTC m=+1419719.766207749", "reported",
         "2024-08-14 11:19:02.953065957 +0000 UTC m=+1419719.766207749"),
        (None, "missing", ""),
        ("garbage", "malformed", ""),
        (42, "malformed", ""),
    ],
)
def test_parse_handshake(value: Any, state: str, when: str) -> None:
    hs = parse_handshake(value)
    assert (hs.state, hs.when) == (state, when)


def test_parse_registration_both_encodings() -> None:
    legacy = parse_registration(LEGACY)
    assert legacy is not None and [(c.memory_mib, c.count, c.healthy) for c in legacy] == [(40960, 10, True),
                                                                                           (40960, 10, False)]
    cards = parse_registration(JSON)
    assert cards is not None and len(cards) == 1
    assert (cards[0].uuid, cards[0].memory_mib, cards[0].cores, cards[0].type) == (
        "GPU-4b3fb0e5-0e84-ada9-b83f-a8a2c757fd28", 23028, 100, "NVIDIA-NVIDIA GeForce RTX 4090")
    assert parse_registration("") == [] and parse_registration("[]") == []
    assert parse_registration(None) is None


@pytest.mark.parametrize("bad", ["[{", '{"id": 1}', '[{"count": 10}]', "GPU-x,ten,1,1,T,0,true:", "GPU-x,1,2:", "[1]"])
def test_parse_registration_malformed(bad: str) -> None:
    assert parse_registration(bad) is None


@pytest.mark.parametrize(
    "annotations,state",
    [
        ({}, "missing"),
        ({HAMI_REGISTER: JSON, HAMI_HANDSHAKE: "Requesting_2025-08-07 11:28:25"}, "registered"),
        ({HAMI_REGISTER: LEGACY}, "registered"),
        ({HAMI_REGISTER: JSON, HAMI_HANDSHAKE: "Deleted_2026-05-07 08:41:13"}, "dropped"),
        ({HAMI_REGISTER: "[]"}, "empty"),
        ({HAMI_REGISTER: "not,a,registration"}, "malformed"),
        ({HAMI_HANDSHAKE: "Requesting_2025-08-07 11:28:25"}, "missing"),
    ],
)
def test_node_registration(annotations: dict[str, Any], state: str) -> None:
    reg = node_registration(_node(annotations))
    assert reg.state == state
    assert reg.registered is (state == "registered")
    assert reg.describe()  # never raises, always says something


def test_node_registration_tolerates_odd_nodes() -> None:
    assert node_registration({}).state == "missing"
    assert node_registration({"metadata": {"annotations": None}}).state == "missing"


def test_webhook_ignored() -> None:
    assert webhook_ignored({"metadata": {"labels": {"hami.io/webhook": "ignore"}}})
    assert webhook_ignored({"metadata": {"labels": {"hami.io/webhook": " Ignore "}}})
    assert not webhook_ignored({"metadata": {"labels": {"hami.io/webhook": "enabled"}}})
    assert not webhook_ignored({"metadata": {}})
    assert not webhook_ignored(None)


def test_flag_value() -> None:
    args = ["scheduler", "--scheduler-name=hami-scheduler", "--force-overwrite-default-scheduler", "false", "-v=4"]
    assert flag_value(args, "--scheduler-name") == "hami-scheduler"
    assert flag_value(args, "--force-overwrite-default-scheduler") == "false"
    assert flag_value(args, "--http_bind") is None
    assert flag_value(["--scheduler-name=a", "--scheduler-name=b"], "--scheduler-name") == "b"
    assert flag_value(["--scheduler-name"], "--scheduler-name") is None


def test_pod_marks() -> None:
    placed = {"metadata": {"annotations": {"hami.io/vgpu-node": "gpu-1", "hami.io/bind-phase": "success"}}}
    assert hami_pod_handled(placed)
    assert not hami_pod_handled({"metadata": {}})
    predicated = {"metadata": {"annotations": {"tencent.com/predicate-node": "gpu-1",
                                               "tencent.com/gpu-assigned": "true"}}}
    assert vcuda_predicated(predicated)
    assert not vcuda_predicated({"metadata": {"annotations": {"tencent.com/gpu-assigned": "true"}}})
