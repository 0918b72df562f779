"""The remediation actions a runbook may offer, with the parameters each one needs.

Runbooks are data; an offer can only name an action listed here, and must bind every required
parameter. The engine needs only these names (it must not import ``bot.actions``, the one package
that writes), so they are declared here as the public contract, and a test pins that the actions
package implements exactly these with exactly these required parameters.
"""

from __future__ import annotations

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
