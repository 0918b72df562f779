""""Did you mean …?": the close match of a mistyped command, option, runbook or context name.

kubectl, git and k8sgpt answer a typo with the word the user meant; one place decides how close is
close enough, so the CLI parser, the Slack parser, the runbook lookup and the kubeconfig errors
all suggest alike. The suggestion is one of the known choices, never the typed text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: difflib's ratio above which a choice counts as what was meant ("why-pendng" ~ "why-pending")
CUTOFF = 0.6


def close_match(word: str, choices: Iterable[str]) -> str | None:
    """The known choice closest to ``word``, or None when none is close."""
    found = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``; did you mean why-pending?`` or nothing: to append to an error line."""
    found = close_match(word, choices)
    return f"; did you mean {found}?" if found else ""
