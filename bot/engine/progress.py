"""What a diagnosis is doing right now, for whoever shows it (the CLI's progress line).

One callable takes one short line ("reading nodes, events", "reading nodes: 3 of 12 answered",
"running 14 checks"). The gather layer and the runner call it at each step; probes never do. It
must be cheap and must not raise: the default does nothing, and Slack keeps its own placeholder.
"""

from __future__ import annotations

from collections.abc import Callable

#: receives a line saying what is being done now
Progress = Callable[[str], None]


def no_progress(_: str) -> None:
    """The default: nobody is watching."""
