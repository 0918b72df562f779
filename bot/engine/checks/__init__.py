"""Registered checks: pure rules over gathered facts that emit finding codes.

Importing this package registers every built-in check.
"""

from bot.engine.checks import capacity, container, node, physical, pod, qgpu, scheduling, spec, working

__all__ = ["capacity", "container", "node", "physical", "pod", "qgpu", "scheduling", "spec", "working"]
