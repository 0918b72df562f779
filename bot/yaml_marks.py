"""Parse YAML into plain Python values while remembering the line of every key and item.

Runbook validation must say ``file:line: what is wrong``, and it must treat a duplicated key as
an error; ``yaml.safe_load`` forgets line numbers and silently keeps the last duplicate. So this
module composes the node graph (``yaml.compose`` with the safe loader) and converts it itself,
recording where each mapping key and sequence item came from.

It must never construct anything but YAML core-schema scalars, lists and dicts: a tag the safe
constructor does not know (``!!python/object``…) or a merge key is reported as a problem, never
honoured. Alias expansion is bounded, so a "billion laughs" document costs a problem line, not
the bot's memory.

Every YAML file a user gives gpubot goes through here: runbooks (``parse_yaml``, with lines),
and the settings file, identity map, kubeconfig, scenarios and annotations a capture parses
(``load_yaml``: plain values or one ``YamlInputError``). It lives outside the packages so the
engine, the simulator and the settings share it without crossing a layer boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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

#: libyaml's safe loader when PyYAML was built with it: it composes the runbooks about six times
#: faster than the pure-Python one, which is most of what ``gpubot runbook`` and ``help`` cost
#: (the settings file is read with it too)
SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def parse_yaml(text: str, *, record_lines: bool = True, max_nodes: int | None = MAX_NODES) -> Parsed:
    """Parse one YAML document; raise ``YamlSyntaxError`` when it is not well-formed YAML."""
    try:
        root = yaml.compose(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit: no slow second parse
            mark = getattr(exc, "problem_mark", None)
            raise YamlSyntaxError(mark.line + 1 if mark else 0, f"nested deeper than {MAX_DEPTH} levels") from None
        root = _compose_for_the_error(text)
    except RecursionError:  # the pure-Python composer, when libyaml is missing
        raise YamlSyntaxError(0, f"nested deeper than {MAX_DEPTH} levels") from None
    parsed = Parsed(value=None)
    if root is None:
        return parsed
    parsed.lines[()] = root.start_mark.line + 1
    converter = _Converter(parsed, record_lines=record_lines, max_nodes=max_nodes)
    parsed.value = converter.convert(root, ())
    return parsed


def load_yaml(text: str) -> Any:
    """A user's YAML document (settings, scenario, identity map) as plain values, or
    ``YamlInputError`` naming the line: bad syntax, nesting deeper than ``MAX_DEPTH``, aliases
    expanding past ``MAX_ALIAS_NODES``, a duplicated key, a tag that is not plain data.

    Fast whatever the input: a 9^9 alias bomb or 10,000 nested brackets is refused in
    milliseconds (``yaml.safe_load`` would take minutes and gigabytes, or overflow the stack).
    """
    try:
        parsed = parse_yaml(text, record_lines=False, max_nodes=None)
    except YamlInputError:
        raise
    except YamlSyntaxError as exc:
        raise YamlInputError(exc.line, exc.message) from None
    if parsed.problems:
        line, problem = parsed.problems[0]
        raise YamlInputError(line, problem)
    if parsed.duplicates:
        dup = parsed.duplicates[0]
        raise YamlInputError(dup.line, f"key {dup.key!r} given twice (first on line {dup.first_line})")
    return parsed.value


def _compose_for_the_error(text: str) -> Node | None:
    """Compose again with the pure-Python loader, whose messages name the token it expected.

    libyaml reports the same errors in other words and sometimes on another line; the runbook
    problems (and their tests) keep one wording whichever loader PyYAML was built with.
    """
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise YamlSyntaxError(0, f"nested deeper than {MAX_DEPTH} levels") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        what = " ".join(p for p in (exc.context, exc.problem) if p) or "malformed YAML"
        raise YamlSyntaxError(line, what) from None
    except yaml.YAMLError as exc:  # pragma: no cover - PyYAML raises marked errors for text input
        raise YamlSyntaxError(0, str(exc)) from None


class _Converter:
    """Walks a composed node graph once, producing values and recording marks."""

    def __init__(self, parsed: Parsed, *, record_lines: bool = True, max_nodes: int | None = MAX_NODES) -> None:
        self.parsed = parsed
        self.scalars = SafeConstructor()
        self.count = 0
        self.active: set[int] = set()
        self.too_big = False
        self.record_lines = record_lines
        self.max_nodes = max_nodes
        #: collections converted once already: meeting one again is an alias being expanded
        self.seen: set[int] = set()
        self.alias_depth = 0
        self.alias_nodes = 0

    def _refuse(self, node: Node, problem: str) -> None:
        """Record the first budget problem only (the rest of the document is cut the same way)."""
        if not self.too_big:
            self.too_big = True
            self.parsed.problems.append((node.start_mark.line + 1, problem))

    def convert(self, node: Node, path: YamlPath) -> Any:
        self.count += 1
        if self.alias_depth:
            self.alias_nodes += 1
        if self.max_nodes is not None and self.count > self.max_nodes:
            self._refuse(node, f"document expands to more than {self.max_nodes} nodes")
            return None
        if self.alias_nodes > MAX_ALIAS_NODES:
            self._refuse(node, f"aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias bomb?)")
            return None
        if isinstance(node, ScalarNode):
            return self._scalar(node)
        if id(node) in self.active:
            self.parsed.problems.append((node.start_mark.line + 1, "recursive alias"))
            return None
        if len(path) >= MAX_DEPTH or len(self.active) >= MAX_DEPTH:
            self._refuse(node, f"nested deeper than {MAX_DEPTH} levels")
            return None
        again = id(node) in self.seen
        self.seen.add(id(node))
        self.alias_depth += again
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return self._sequence(node, path)
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
        finally:
            self.active.discard(id(node))
            self.alias_depth -= again
        return None  # pragma: no cover - composer yields only the three node kinds

    def _unsupported(self, node: Node) -> bool:
        """Report a tag the safe constructor would not build as plain data."""
        if node.tag in SafeConstructor.yaml_constructors and node.tag != "tag:yaml.org,2002:merge":
            return False
        if node.tag == "tag:yaml.org,2002:merge":
            problem = "merge keys ('<<') are not supported"
        else:
            problem = f"unsupported tag '{node.tag}': only plain YAML values are allowed"
        self.parsed.problems.append((node.start_mark.line + 1, problem))
        return True

    def _scalar(self, node: ScalarNode) -> Any:
        if self._unsupported(node):
            return "<<" if node.tag == "tag:yaml.org,2002:merge" else None
        try:
            return self.scalars.construct_object(node, deep=True)
        except ConstructorError as exc:
            problem = exc.problem or "cannot construct this value"
            self.parsed.problems.append((node.start_mark.line + 1, f"unsupported value: {problem}"))
            return None

    def _sequence(self, node: SequenceNode, path: YamlPath) -> list[Any] | None:
        if self._unsupported(node):
            return None
        items: list[Any] = []
        for index, child in enumerate(node.value):
            child_path = (*path, index)
            if self.record_lines:
                self.parsed.lines[child_path] = child.start_mark.line + 1
            items.append(self.convert(child, child_path))
        return items

    def _mapping(self, node: MappingNode, path: YamlPath) -> dict[Any, Any] | None:
        if self._unsupported(node):
            return None
        result: dict[Any, Any] = {}
        first_lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode):
                self.parsed.problems.append((line, "a mapping key must be a plain scalar"))
                continue
            key = self._scalar(key_node)
            try:
                hash(key)
            except TypeError:
                self.parsed.problems.append((line, "a mapping key must be a plain scalar"))
                continue
            child_path = (*path, str(key))
            if key in first_lines:
                self.parsed.duplicates.append(DuplicateKey(path, str(key), line, first_lines[key]))
                # keep the first definition: later ones are the error being reported
                continue
            first_lines[key] = line
            if self.record_lines:
                self.parsed.lines[child_path] = line
            result[key] = self.convert(value_node, child_path)
        return result
