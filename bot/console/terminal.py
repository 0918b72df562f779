"""What the terminal on the other end of stdout/stderr can show: colour, width, a progress line.

kubectl and k8sgpt users expect colour and the full width on a terminal, and plain text with a
stable width when the output is piped into grep, less or a file. ``NO_COLOR`` (no-color.org), set
to anything non-empty, turns colour off everywhere; ``TERM=dumb`` too. Nothing here writes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

#: the width of text written to a pipe or file: stable, so scripts and diffs see the same lines
PIPE_WIDTH = 100
#: the narrowest and widest layout on a terminal (below 60 the indented blocks stop reading well)
MIN_WIDTH, MAX_WIDTH = 60, 200

_SGR = {"red": "31", "yellow": "33", "blue": "34", "green": "32", "bold": "1", "dim": "2"}


@dataclass(frozen=True)
class Terminal:
    """How to write for one stream: its width and whether it takes ANSI colour."""

    width: int = PIPE_WIDTH
    color: bool = False
    tty: bool = False

    def paint(self, text: str, *styles: str) -> str:
        """``text`` in the given styles (``red``, ``bold`` …) when colour is on, else as it is."""
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_SGR[s] for s in styles)
        return f"\033[{codes}m{text}\033[0m"


def is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def color_allowed(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return not env.get("NO_COLOR") and env.get("TERM", "") != "dumb"


def terminal_for(stream: TextIO, env: Mapping[str, str] | None = None) -> Terminal:
    """The stream's terminal: its columns and colour on a TTY, the fixed pipe layout otherwise."""
    if not is_tty(stream):
        return Terminal()
    columns = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
    return Terminal(width=max(MIN_WIDTH, min(MAX_WIDTH, columns)), color=color_allowed(env), tty=True)
