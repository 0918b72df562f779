"""Probe tests use the shared ``start_fleet`` fixture from tests/conftest.py."""
