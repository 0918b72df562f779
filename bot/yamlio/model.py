"""The values ``bot.yamlio.marks`` gives back and the errors it raises: no PyYAML here.

Shared by ``bot.yamlio.marks`` (the public parsing functions, which re-export all of this) and
``bot.yamlio.convert`` (the PyYAML half, imported with the first document parsed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: a location inside a document: mapping keys (as ``str``) and sequence indexes
YamlPath = tuple[str | int, ...]

#: the most nodes one runbook document may expand to (aliases count every time they are used)
MAX_NODES = 200_000
#: the most nodes that aliases may add to any document (a "billion laughs" 9^9 bomb stops here,
#: in milliseconds; an honest document repeats an anchor a few times)
MAX_ALIAS_NODES = 10_000
#: the deepest nesting of lists and mappings (libyaml itself stops at 1000; ours stays well
#: clear of Python's recursion limit, and no gpubot file needs more than a dozen)
MAX_DEPTH = 100


class YamlSyntaxError(Exception):
    """The text is not YAML; ``line`` is 1-based (0 when the parser gave no position)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class YamlInputError(YamlSyntaxError):
    """A user's YAML file gpubot will not load: not YAML, too deep, an alias bomb, a duplicate
    key, a tag that is not plain data. ``str()`` is ``line N: what``, for a one-line error."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True)
class DuplicateKey:
    """A key that appears twice in one mapping; both lines are 1-based."""

    path: YamlPath
    key: str
    line: int
    first_line: int


@dataclass
class Parsed:
    """A document as plain values, plus where each part of it was written."""

    value: Any
    #: 1-based line of each mapping key and sequence item, by path; ``()`` is the document start
    lines: dict[YamlPath, int] = field(default_factory=dict)
    duplicates: list[DuplicateKey] = field(default_factory=list)
    #: (line, problem) for content that was not converted (unknown tags, recursive aliases…)
    problems: list[tuple[int, str]] = field(default_factory=list)

    def line(self, path: YamlPath) -> int:
        """The line of ``path``, or of its nearest recorded ancestor (the document start last)."""
        probe = tuple(path)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return self.lines.get((), 1)
