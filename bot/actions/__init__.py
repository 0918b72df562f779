"""The only code that changes anything in a cluster or on a node.

Every action runs only after a confirmation (``bot.remediation``) that checked approver, expiry,
single use and the precondition. Importing this package registers every action in ``ACTIONS``;
``bot.registry.ACTION_NAMES`` is the public list they must match.
"""

from bot.actions import checkpoint, kubelet, namespace, node, pod, qgpu  # noqa: F401 - registration
from bot.actions.base import ACTIONS, BLAST_RADIUS_LIMIT, Action, ActionContext, get_action

__all__ = ["ACTIONS", "BLAST_RADIUS_LIMIT", "Action", "ActionContext", "get_action"]
