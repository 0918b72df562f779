"""Registered probes (facts_node)."""
