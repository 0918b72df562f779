"""Find the lines of a command's output that start with a given prefix, without splitting it.

A fleet-wide node-status reads hundreds of 10-20 kB answers on the event loop; the parsers that
only need a few marked lines of each (the combined read's section markers, the ``-q`` report's
``GPU`` lines) jump between them with ``str.find`` instead of splitting every line or running a
multi-line ``^`` pattern, which tries every position of the text.
"""

from __future__ import annotations

from collections.abc import Iterator


def lines_starting_with(text: str, prefix: str) -> Iterator[tuple[int, int]]:
    """(start, end) of every line of ``text`` that starts with ``prefix``, in order; ``end`` is
    the index of the line's newline, or the text's length for the last line."""
    at = 0 if text.startswith(prefix) else _line_after(text.find("\n" + prefix))
    while at >= 0:
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        yield at, end
        at = _line_after(text.find("\n" + prefix, end))


def _line_after(newline: int) -> int:
    """Where the line after the newline at ``newline`` starts; -1 when there is none (-1)."""
    return newline + 1 if newline >= 0 else -1
