"""Registered checks: pure rules over gathered facts that emit finding codes.

Importing this package registers every built-in check.
"""

from bot.engine.checks import capacity, physical, pod, qgpu, scheduling, spec

__all__ = ["capacity", "physical", "pod", "qgpu", "scheduling", "spec"]
