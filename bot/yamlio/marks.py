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

from typing import Any

from bot.yamlio.model import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    MAX_NODES,
    DuplicateKey,
    Parsed,
    YamlInputError,
    YamlPath,
    YamlSyntaxError,
)

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_NODES",
    "SAFE_LOADER",
    "DuplicateKey",
    "Parsed",
    "YamlInputError",
    "YamlPath",
    "YamlSyntaxError",
    "load_yaml",
    "parse_yaml",
]

#: the loader that composes documents; None: libyaml's safe loader when PyYAML was built with it
#: (it composes the runbooks about six times faster than the pure-Python one, which is most of what
#: ``gpubot runbook`` and ``help`` cost), else the pure-Python one. PyYAML itself is imported
#: with the first document parsed (``bot.yamlio.convert``), not with this module: commands that
#: read no YAML (``gpubot --version``) do not pay for it.
SAFE_LOADER: type | None = None


def parse_yaml(text: str, *, record_lines: bool = True, max_nodes: int | None = MAX_NODES) -> Parsed:
    """Parse one YAML document; raise ``YamlSyntaxError`` when it is not well-formed YAML."""
    import yaml

    from bot.yamlio.convert import Converter, compose_for_the_error, fast_safe_loader

    try:
        root = yaml.compose(text, Loader=SAFE_LOADER or fast_safe_loader())
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit: no slow second parse
            mark = getattr(exc, "problem_mark", None)
            raise YamlSyntaxError(mark.line + 1 if mark else 0, f"nested deeper than {MAX_DEPTH} levels") from None
        root = compose_for_the_error(text)
    except RecursionError:  # the pure-Python composer, when libyaml is missing
        raise YamlSyntaxError(0, f"nested deeper than {MAX_DEPTH} levels") from None
    parsed = Parsed(value=None)
    if root is None:
        return parsed
    parsed.lines[()] = root.start_mark.line + 1
    converter = Converter(parsed, record_lines=record_lines, max_nodes=max_nodes)
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
