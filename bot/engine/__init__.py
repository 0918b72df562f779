"""Runbook loading and validation, the probe/check runner and the findings it produces.

The engine never imports Slack, the CLI or the actions package.
"""
