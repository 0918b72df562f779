"""Registered probes (facts_exec)."""
