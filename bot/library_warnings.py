"""Warnings from the libraries' own imports, which nobody running gpubot can act on."""

from __future__ import annotations

import warnings


def quiet_library_warnings() -> None:
    """asyncssh names cryptography's DSA types at import, and recent cryptography releases (51
    here) warn about DSA there: three warnings on the stderr of every command that reads a node,
    about a library's import rather than anything the user did or can act on. Set when a process
    starts (the CLI, the installer's ``bot.precompile``, the benchmarks), not when ``bot`` is
    imported: the filter's patterns would be compiled by every process that imports gpubot
    (bot/regex_code.py keeps only what gpubot's modules compile)."""
    warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh(\.|$)")
