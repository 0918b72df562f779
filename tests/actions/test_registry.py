"""The action registry and its fixed parts: names, blast radius, parameters, the SSH write allow-list,
and that only ``bot/actions/kube_writes.py`` calls the official client's write methods."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.actions import ACTIONS, BLAST_RADIUS_LIMIT, get_action
from bot.actions.base import ActionOutcome, StepOutcome
from bot.actions.kube_writes import GRACE_PERIOD_S
from bot.actions.node_exec import WRITE_COMMANDS, backup_path, move_checkpoint_command
from bot.errors import UsageError
from bot.probes.checkpoint import CHECKPOINT_PATH
from bot.registry import ACTION_NAMES

BOT = Path(__file__).resolve().parents[2] / "bot"
WRITE_METHOD = re.compile(r"^(delete|patch|create|replace)_")


def test_registry_implements_exactly_the_public_action_names() -> None:
    assert set(ACTIONS) == ACTION_NAMES


@pytest.mark.parametrize("name", sorted(ACTION_NAMES))
def test_every_action_declares_blast_radius_and_done(name: str) -> None:
    act = ACTIONS[name]
    assert act.name == name
    assert 40 <= len(act.blast_radius) <= BLAST_RADIUS_LIMIT
    assert act.done


def test_blast_radius_cites_the_upstream_hazards() -> None:
    assert "10-30 s" in ACTIONS["kubelet.restart"].blast_radius
    assert "containers keep running" in ACTIONS["kubelet.restart"].blast_radius
    assert "kubernetes#116125" in ACTIONS["checkpoint.clear"].blast_radius
    assert "kubernetes#130145" in ACTIONS["pod.delete"].blast_radius


def test_ssh_write_allow_list_is_exactly_the_kubelet_unit_commands() -> None:
    assert {
        "systemctl restart kubelet",
        "systemctl stop kubelet",
        "systemctl start kubelet",
        "systemctl is-active kubelet",
    } == WRITE_COMMANDS


def test_checkpoint_backup_is_named_by_nanosecond_utc_time_and_action_id() -> None:
    ns = int(datetime(2026, 5, 7, 10, 20, 3, tzinfo=UTC).timestamp()) * 1_000_000_000 + 123_456_789
    action_id = "Ab3_x9QkLm2P-rest-of-the-id-xyz12"
    expected = CHECKPOINT_PATH + ".bak-20260507T102003.123456789Z-Ab3_x9QkLm2P"
    assert backup_path(ns, action_id) == expected
    assert move_checkpoint_command(expected) == f"mv {CHECKPOINT_PATH} {expected}"
    # the same nanosecond for two actions, or two moves of one action, never share a name
    assert backup_path(ns, "Zz9_otherActionIdXXXXXXXXXXXXXXXX") != expected
    assert backup_path(ns + 1, action_id) != expected


@pytest.mark.parametrize(
    "backup",
    [
        CHECKPOINT_PATH + ".bak-20260507T102003Z",  # the old, second-resolution form
        CHECKPOINT_PATH + ".bak-20260507T102003.123456789Z-Ab3_x9QkLm2P; reboot",
        "/etc/passwd",
    ],
)
def test_only_a_backup_path_can_ride_on_the_mv(backup: str) -> None:
    with pytest.raises(ValueError):
        move_checkpoint_command(backup)
    with pytest.raises(ValueError):
        backup_path(0, "bad id!")


@pytest.mark.parametrize(
    ("name", "params", "error"),
    [
        ("kubelet.restart", {}, "missing parameter"),
        ("kubelet.restart", {"node": "n1", "pod": "x"}, "unexpected parameter"),
        ("kubelet.restart", {"node": "n1; reboot"}, "invalid node name"),
        ("pod.delete", {"pod": "p"}, "missing parameter"),
        ("pod.delete", {"pod": "p", "namespace": "Bad_NS"}, "invalid namespace"),
        ("namespace.label", {"namespace": "a"}, "either label and value, or copy_from"),
        ("namespace.label", {"namespace": "a", "label": "k", "value": "v", "copy_from": "b"}, "either"),
        ("namespace.label", {"namespace": "a", "label": "bad key!", "value": "v"}, "invalid label key"),
        ("namespace.label", {"namespace": "a", "label": "k", "value": "$(x)"}, "invalid label value"),
        (
            "namespace.label",
            {"namespace": "a", "label": "kubernetes.io/metadata.name", "value": "a"},
            "API server",
        ),
        ("no.such", {}, "unknown action"),
    ],
)
def test_bad_parameters_are_refused_before_any_call(name: str, params: dict[str, str], error: str) -> None:
    with pytest.raises(UsageError, match=re.escape(error)):
        get_action(name).check_params(params)


def test_good_parameters_pass() -> None:
    assert (
        get_action("namespace.label").check_params(
            {
                "namespace": "ml-team",
                "label": "tke.cloud.tencent.com/qgpu-schedule-policy",
                "value": "fixed-share",
            }
        )["value"]
        == "fixed-share"
    )
    assert get_action("qgpu.rollout-restart").check_params({}) == {}


def test_outcome_lines_carry_each_step_status() -> None:
    outcome = ActionOutcome(
        False,
        "stopped.",
        [StepOutcome("cordon node n", "ok"), StepOutcome("start kubelet", "failed", "exit 1")],
        state="node n: CORDONED",
    )
    assert outcome.step_lines() == ["ok: cordon node n", "failed: start kubelet — exit 1"]
    assert outcome.summary_line() == "stopped. State: node n: CORDONED"


def _client_write_calls(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and WRITE_METHOD.match(node.attr)
            and ("namespaced" in node.attr or node.attr in ("patch_node", "patch_namespace", "delete_node"))
        ):
            found.append((node.attr, node.lineno))
    return found


#: gpubot's own state on the API (``state: kubernetes``): they write only gpubot.dev objects and
#: Leases in its namespace, never what it diagnoses (checked below)
STATE = (BOT / "state",)
STATE_WRITES = {
    f"{verb}_namespaced_{kind}{suffix}"
    for verb in ("create", "replace", "delete")
    for kind in ("custom_object", "custom_object_status", "lease")
    for suffix in ("", "_with_http_info")
}


def _state_module(path: Path) -> bool:
    return any(path == s or path.is_relative_to(s) for s in STATE)


def test_only_kube_writes_calls_the_client_write_methods() -> None:
    offenders = {}
    for path in BOT.rglob("*.py"):
        if path.is_relative_to(BOT / "sim") or path == BOT / "actions" / "kube_writes.py":
            continue
        if _state_module(path):
            other = [(m, line) for m, line in _client_write_calls(path) if m not in STATE_WRITES]
            assert not other, f"{path}: the state code writes only gpubot's objects and Leases: {other}"
            continue
        calls = _client_write_calls(path)
        if calls:
            offenders[str(path.relative_to(BOT))] = calls
    assert not offenders
    used = {m for m, _ in _client_write_calls(BOT / "actions" / "kube_writes.py")}
    assert used == {"delete_namespaced_pod", "patch_node", "patch_namespace", "patch_namespaced_daemon_set"}


def test_deletes_are_graceful_and_never_forced() -> None:
    assert GRACE_PERIOD_S == 30
    tree = ast.parse((BOT / "actions" / "kube_writes.py").read_text(encoding="utf-8"))
    keywords = [kw for node in ast.walk(tree) if isinstance(node, ast.Call) for kw in node.keywords]
    names = {kw.arg for kw in keywords}
    assert "grace_period_seconds" in names
    assert not names & {"force", "propagation_policy", "orphan_dependents"}
    for kw in keywords:
        if kw.arg == "grace_period_seconds":
            assert not (isinstance(kw.value, ast.Constant) and kw.value.value == 0)
