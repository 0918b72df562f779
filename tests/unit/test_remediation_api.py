"""The remediation package's public names are pinned: views and the wiring use only these."""

from __future__ import annotations

import bot.remediation


def test_the_public_names_are_pinned() -> None:
    assert bot.remediation.__all__ == [
        "Approvers", "ClickOutcome", "ClusterClients", "PendingAction", "RemediationService"
    ]
    assert all(getattr(bot.remediation, name, None) is not None for name in bot.remediation.__all__)


def test_the_entry_offers_clicks_and_sweeps() -> None:
    service = bot.remediation.RemediationService
    assert all(callable(getattr(service, name)) for name in ("offer", "click", "sweep_expired", "recover"))
