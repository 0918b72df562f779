"""The PyYAML half of ``bot.yamlio.marks``: composing a document and converting its node graph.

Kept apart so that importing ``bot.yamlio.marks`` (every command imports the settings, which import
it) does not import PyYAML and libyaml; ``parse_yaml`` imports this module with the first document
it parses. Same rules as ``bot.yamlio.marks``: only core-schema scalars, lists and dicts are built.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.yamlio.model import MAX_ALIAS_NODES, MAX_DEPTH, MAX_NODES, DuplicateKey, Parsed, YamlPath, YamlSyntaxError


@functools.cache
def fast_safe_loader() -> type:
    """libyaml's safe loader when PyYAML was built with it, else the pure-Python one."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[no-any-return]


def compose_for_the_error(text: str) -> Node | None:
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


class Converter:
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
