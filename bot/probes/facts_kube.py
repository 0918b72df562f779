"""Registered probes (facts_kube)."""
