"""Text handling for runbooks: filling finding templates and laying out guidance as plain text.

Templates come from YAML that operators may edit, and parameters come from cluster facts (pod
names, event messages) that anybody able to create a pod controls. So filling a template must
never evaluate anything: only plain ``{name}`` fields are replaced, by ``str()`` of the value;
attribute access, indexing, conversions and format specs are not interpreted (the validator
rejects them in runbook files; at render time they are left as literal text). Rendering never
raises. It must never call ``str.format`` on runbook text.
"""

from __future__ import annotations

import re
import string
import textwrap
from collections.abc import Iterable, Mapping, Sequence

#: a replaceable field: a plain identifier between single braces
_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: the longest text one parameter may contribute (event messages can be huge)
MAX_PARAM_CHARS = 2000
#: titles are one line of at most this many characters after filling
MAX_TITLE = 150


def param_text(value: object) -> str:
    """How one parameter value reads in a message: lists joined by ', ', clipped, never raising."""
    try:
        if isinstance(value, str):
            text = value
        elif isinstance(value, list | tuple | set | frozenset):
            items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
            text = ", ".join(str(v) for v in items)
        else:
            text = str(value)
    except Exception:  # a hostile __str__ must not break a report
        text = "?"
    if len(text) > MAX_PARAM_CHARS:
        text = text[: MAX_PARAM_CHARS - 1] + "…"
    return text


def render_template(template: str, params: Mapping[str, object]) -> str:
    """Fill ``{name}`` fields from ``params``; a missing name stays as ``{name}``. Never raises.

    One substitution pass of ``_FIELD`` (``{{``/``}}`` become one brace, anything else that is
    not a plain field stays literal text): a node-status over hundreds of nodes words hundreds of
    findings, and ``string.Formatter`` did the same in pure Python at several times the cost."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]
        return param_text(params[name]) if name in params else match.group(0)

    try:
        return _FIELD.sub(fill, str(template))
    except Exception:  # pragma: no cover - a hostile Mapping; belt and braces
        return str(template)


def render_title(template: str, params: Mapping[str, object]) -> str:
    """A filled title as one line of at most ``MAX_TITLE`` characters."""
    text = " ".join(render_template(template, params).split())
    if len(text) > MAX_TITLE:
        text = text[: MAX_TITLE - 1] + "…"
    return text


def template_fields(template: str) -> list[str]:
    """The ``{name}`` fields a template uses, in order (what ``render_template`` would fill)."""
    return [m.group(1) for m in _FIELD.finditer(template) if m.group(1)]


def placeholder_problems(template: str) -> list[str]:
    """Why ``template`` is not a plain-fields template (empty list when it is fine).

    Stricter than rendering: anything ``str.format`` would treat specially must be spelled out
    as ``{{``/``}}`` or be a plain ``{name}``, so an operator sees the mistake at load time.
    """
    problems: list[str] = []
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError as exc:
        return [f"malformed placeholder ({exc}); write literal braces as '{{{{' and '}}}}'"]
    for _literal, name, spec, conversion in pieces:
        if name is None:
            continue
        shown = "{" + name + ("!" + conversion if conversion else "") + (":" + spec if spec else "") + "}"
        if conversion:
            problems.append(f"placeholder {shown} uses a conversion ('!'); only plain {{name}} is allowed")
        elif spec:
            problems.append(f"placeholder {shown} uses a format spec (':'); only plain {{name}} is allowed")
        elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            problems.append(f"placeholder {shown} is not a plain name (no attributes, indexes or positions)")
    return problems


# ---------------------------------------------------------------------------------------------
# plain-text layout for guidance (CLI and Slack code blocks)

_BULLET = re.compile(r"^(\s*)([-*•]|\d+[.)])\s+")


def wrap_paragraphs(text: str, width: int, indent: str = "") -> list[str]:
    """Wrap prose to ``width``; blank lines separate paragraphs, bullet lines stay bullets."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        if out:
            out.append("")
        lines = [ln.rstrip() for ln in block.splitlines() if ln.strip()]
        if any(_BULLET.match(ln) for ln in lines):
            for item in _bullet_items(lines):
                match = _BULLET.match(item)
                hang = " " * (match.end() if match else 0)
                out.extend(
                    textwrap.wrap(
                        item.strip() if not match else item[match.start(2) :],
                        width=max(20 + len(indent), width),
                        initial_indent=indent,
                        subsequent_indent=indent + hang,
                        break_on_hyphens=False,
                    )
                )
        else:
            joined = " ".join(ln.strip() for ln in lines)
            out.extend(
                textwrap.wrap(
                    joined,
                    width=max(20 + len(indent), width),
                    initial_indent=indent,
                    subsequent_indent=indent,
                    break_on_hyphens=False,
                )
            )
    return out


def _bullet_items(lines: list[str]) -> Iterable[str]:
    """Group continuation lines with the bullet they belong to."""
    current: list[str] = []
    for line in lines:
        if _BULLET.match(line) and current:
            yield " ".join(current)
            current = []
        current.append(line.strip() if current else line)
    if current:
        yield " ".join(current)


def render_table(
    columns: Sequence[str], rows: Sequence[Sequence[object]], *, width: int, indent: str = ""
) -> list[str]:
    """Columns aligned with a rule under the header; wide cells wrap inside their column."""
    header = [str(c) for c in columns]
    body = [[param_text(cell) for cell in row] for row in rows]
    ncols = len(header)
    natural = [max([len(header[i])] + [len(r[i]) for r in body if i < len(r)]) for i in range(ncols)]
    # a column is not squeezed below its longest word (up to 30), so words are not cut in half
    floors = [
        min(
            natural[i],
            max(
                8,
                min(
                    30,
                    max(
                        len(w)
                        for cell in [header[i]] + [r[i] for r in body if i < len(r)]
                        for w in (cell.split() or [""])
                    ),
                ),
            ),
        )
        for i in range(ncols)
    ]
    gap = 2
    budget = max(ncols * 8, width - len(indent) - gap * (ncols - 1))
    widths = list(natural)
    # squeeze above the floors first; cut words only when the width leaves no other way
    for limits in (floors, [8] * ncols):
        while sum(widths) > budget:
            squeezable = [i for i in range(ncols) if widths[i] > limits[i]]
            if not squeezable:
                break
            widest = max(squeezable, key=lambda i: widths[i])
            widths[widest] -= 1
    lines = _table_row(header, widths, gap, indent)
    lines.append(indent + (" " * gap).join("-" * w for w in widths))
    for row in body:
        padded = row + [""] * (ncols - len(row))
        lines.extend(_table_row(padded[:ncols], widths, gap, indent))
    return lines


def _table_row(cells: Sequence[str], widths: Sequence[int], gap: int, indent: str) -> list[str]:
    wrapped = [
        textwrap.wrap(c, width=w, break_on_hyphens=False) or [""] for c, w in zip(cells, widths, strict=True)
    ]
    height = max(len(w) for w in wrapped)
    out = []
    for i in range(height):
        parts = [(w[i] if i < len(w) else "").ljust(widths[j]) for j, w in enumerate(wrapped)]
        out.append((indent + (" " * gap).join(parts)).rstrip())
    return out
