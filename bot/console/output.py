"""How the CLI prints a report: ``-o text|json|yaml|wide`` (``--json`` is ``-o json``), sized and
coloured for the terminal it goes to.

text: the readable report, wrapped at the terminal's width on a TTY (100 columns on a pipe),
severities coloured unless ``NO_COLOR``; a cause found on many objects shows the first of them
and counts the rest. wide: the same text, never wrapped (one line per item, for grep), every
object and evidence line listed. json: one object (the public contract). yaml: the same object as
YAML.
"""

from __future__ import annotations

import argparse
import json
import sys

from bot.commands import Command
from bot.console.terminal import terminal_for
from bot.errors import UsageError
from bot.names import printable
from bot.report import Report
from bot.suggest import did_you_mean

#: "never wrap": wider than any line a report holds
WIDE = 100_000


def output_format(args: argparse.Namespace, spec: Command) -> str:
    """The format asked for: ``-o`` checked against what the command prints, ``--json`` as json."""
    chosen = str(getattr(args, "output", "") or "")
    as_json = bool(getattr(args, "json", False))
    if not chosen:
        return "json" if as_json else "text"
    formats = next((o.metavar.split("|") for o in spec.options_for("cli") if o.dest == "output"), ["text", "json"])
    if chosen not in formats:
        hint = did_you_mean(chosen, formats)
        raise UsageError(f"-o {printable(chosen)}: use {', '.join(formats[:-1])} or {formats[-1]}{hint}")
    if as_json and chosen != "json":
        raise UsageError(f"--json and -o {chosen} disagree: give one of them")
    return chosen


def emit_report(report: Report, fmt: str) -> None:
    """Print ``report`` to stdout in ``fmt``."""
    if fmt == "json":
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    elif fmt == "yaml":
        from bot.yamlio.dump import dump_yaml  # only for this format: most commands print text or JSON

        print(dump_yaml(report.to_dict(), width=WIDE), end="")
    else:
        from bot.console.render_text import render_text

        term = terminal_for(sys.stdout)
        wide = fmt == "wide"
        print(render_text(report, width=WIDE if wide else term.width, term=term, full=wide), end="")
