"""What a gpubot command imports, and what importing only that costs.

``python -m bench.imports_child record OUT ARG...``: runs ``gpubot ARG...`` in this process (the
CLI's ``main``; the output is discarded) and writes the names of every module it imported to
``OUT``, one a line. ``python -m bench.imports_child import LIST``: imports those modules and
nothing else, so the benchmark can time, from spawn to exit, the fixed start-up cost of exactly
that command (interpreter and imports), not of a guessed list.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from pathlib import Path


def record(out: str, argv: list[str]) -> None:
    from bot.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        main(argv)
    names = sorted(n for n in sys.modules if n != "__main__" and not n.startswith("bench"))
    Path(out).write_text("\n".join(names) + "\n", encoding="utf-8")


def import_all(listing: str) -> None:
    for name in Path(listing).read_text(encoding="utf-8").split():
        with contextlib.suppress(ImportError):  # a module a package only makes at run time
            importlib.import_module(name)


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3:])
    else:
        import_all(sys.argv[2])
