"""Registered checks."""
