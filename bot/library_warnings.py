"""Warnings from the libraries' own imports, which nobody running gpubot can act on.

Its own module, importing only ``warnings``: ``bot.precompile`` sets the filter before it records
the regular expressions gpubot's imports compile, and a module that brought ``logging`` along
(``bot.log_stream``) would leave logging's patterns compiled before the recording, unkept (338 ->
329 kept), compiled again by every process."""

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
