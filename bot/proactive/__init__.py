"""Proactive watching: periodic sweeps that post GPU problems once and keep that one post current.

``problems`` turns a node-status report into fingerprinted problems, ``store`` remembers the open
ones (and where they were posted) in the state database, ``watcher`` runs a sweep and decides what
to post, edit or resolve, ``posting`` makes each post once across stops (intent first).
Rendering lives in ``bot.slack.proactive_messages``. Nothing here writes
to a cluster: a sweep only reads, like every diagnosis.
"""

from bot.proactive.problems import Problem, problems_from_report
from bot.proactive.watcher import SNOOZES, Snoozer, SweepResult, Watcher
from bot.state.contracts import ProblemStore
from bot.state.records import OpenProblem

__all__ = [
    "SNOOZES",
    "OpenProblem",
    "Problem",
    "ProblemStore",
    "Snoozer",
    "SweepResult",
    "Watcher",
    "problems_from_report",
]
