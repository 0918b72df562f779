"""The remediation actions a runbook may offer, with the parameters each one needs.

Runbooks are data; an offer can only name an action listed here, and must bind every required
parameter. The engine needs only these names (it must not import ``bot.actions``, the one package
that writes), so they are declared here as the public contract, and a test pins that the actions
package implements exactly these with exactly these required parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

#: action -> parameters it cannot run without (``findings.md``); every one runs behind a confirmation
ACTIONS: dict[str, frozenset[str]] = {
    "pod.delete": frozenset({"namespace", "pod"}),
    "qgpu.restart-manager": frozenset({"node"}),
    "qgpu.rollout-restart": frozenset(),
    "kubelet.restart": frozenset({"node"}),
    "checkpoint.clear": frozenset({"node"}),
    "namespace.label": frozenset({"namespace"}),
    "node.cordon": frozenset({"node"}),
    "node.uncordon": frozenset({"node"}),
}
ACTION_NAMES: frozenset[str] = frozenset(ACTIONS)

#: what each action does, in the words of a button (the target follows after " · ")
ACTION_LABELS: dict[str, str] = {
    "pod.delete": "Delete pod",
    "qgpu.restart-manager": "Restart qgpu-manager",
    "qgpu.rollout-restart": "Rollout-restart the qGPU DaemonSets",
    "kubelet.restart": "Restart kubelet",
    "checkpoint.clear": "Clear the device-plugin checkpoint",
    "namespace.label": "Label namespace",
    "node.cordon": "Cordon node",
    "node.uncordon": "Uncordon node",
}


def action_target(params: Mapping[str, str]) -> str:
    """What an offer acts on, as a person names it: the node, ``ns/pod``, or the namespace."""
    if params.get("pod"):
        return f"{params.get('namespace', '')}/{params['pod']}".lstrip("/")
    return str(params.get("node") or params.get("namespace") or "")


def action_label(action: str, params: Mapping[str, str] | None = None) -> str:
    """``Restart qgpu-manager · tcs-10-29-25-5``: the action in words, then its target."""
    words = ACTION_LABELS.get(action, action)
    target = action_target(params or {})
    return f"{words} · {target}" if target else words
