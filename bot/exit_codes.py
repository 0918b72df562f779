"""The exit statuses of the ``gpubot`` command: one table, documented in the README.

Scripts and CI jobs branch on these, so they are a public contract like the finding codes: add
one when a new outcome needs it, never renumber one. An incomplete answer outranks findings: a
report that could not read what it needed says so by its status even when it found something.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    #: the command answered completely and found nothing wrong (or it is not a diagnosis)
    OK = 0
    #: a bug in gpubot: an unexpected error (the message asks to rerun with -v)
    INTERNAL = 1
    #: the command line or slash-command input is wrong (unknown command, invalid name)
    USAGE = 2
    #: a configuration the user can fix: kubeconfig, context, settings file, scenario file,
    #: runbook file (``gpubot runbooks validate`` finding problems, or a command loading them). The
    #: same status as bad usage (scripts have always seen 2 for "fix your input"); the one-line
    #: message names the file, the key and what was expected
    CONFIG = 2
    #: the answer is incomplete: reads it rested on failed (API unreachable, 403, 5xx/429)
    INCOMPLETE = 3
    #: the answer is complete and reports a problem (a critical or warning finding)
    FINDINGS = 4
    #: interrupted by the user (Ctrl-C)
    INTERRUPTED = 130


#: severities that make a complete diagnosis exit ``FINDINGS`` (info findings are notes, not problems)
PROBLEM_SEVERITIES = frozenset({"critical", "warning"})


def diagnosis_status(severities: Iterable[str]) -> ExitCode:
    """The status of a complete diagnosis from its findings' severities: ``FINDINGS`` when one is
    critical or a warning (``POD_NOT_FOUND`` included: the answer is "it does not exist"), else
    ``OK``. Read failures (``INCOMPLETE``) are decided before this, by the caller."""
    return ExitCode.FINDINGS if any(s in PROBLEM_SEVERITIES for s in severities) else ExitCode.OK
