"""The parts of checks that rest on one node's reading, worked out as each node answers.

node-status reads every GPU node, 16 at a time; what a check works out of one node's reading
and the API's facts (that node's cards' health, whether its allocation is real, its busy cards)
was all worked out after the last node had answered: at 500 nodes ~12 ms of the ~30 ms the asker
waits for once the readings are in, while the event loop sat idle between answers during the
fan-out. A check names such a part (``Check.per_node``, a ``PerNode``); the node-readings loader
works it out for each node as it answers (``EarlyParts``), and the check, at the end, calls the
part as it would anyway and gets that value, where it was worked out of the very reading it
asks about: the same object, not added to since (``NodeObservation.revision``: the kubelet's
Lease and dcgm-exporter add to readings after the fan-out). Anything else is worked out then, as
before, so a part that could not be worked out early (a fact it reads not gathered yet) only
costs the time it always did.

A part must read nothing of the readings but the one it is given (``node_readings`` and what
rests on it are not gathered while the nodes are read: reading them there fails, and the part is
then simply worked out at the end).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar, cast

from bot.engine.check import Detection
from bot.engine.facts import Facts
from bot.probes.observation import NodeObservation

log = logging.getLogger(__name__)

#: ``Facts.beside`` name of what ``EarlyParts`` worked out: (part, node) -> (reading, its revision, value)
EARLY_PER_NODE = "early_per_node"
#: ``Facts.beside`` name of the parts' detections, worded as they came: id -> (detection, finding)
EARLY_WORDS = "early_words"

_T = TypeVar("_T")

EarlyValues = dict[tuple["PerNode[Any]", str], tuple[NodeObservation, int, Any]]


class PerNode(Generic[_T]):
    """``fn(facts, node, reading)``, taken from what ``EarlyParts`` worked out for that very
    reading where it did. Callers must not change the value: it is the one worked out early.

    ``of_reading`` False: ``fn`` reads nothing of the reading, only the question's API facts
    (which do not change within a question), so the value worked out as the node answered stands
    whatever its reading; the check calls it with ``reading`` None (it need not read the nodes).
    ``asked``: whether the check will ask for it in this question (default: always); where it
    will not, it is not worked out early either."""

    def __init__(
        self,
        fn: Callable[[Facts, str, Any], _T],
        *,
        of_reading: bool = True,
        asked: Callable[[Facts], bool] | None = None,
    ) -> None:
        self.fn = fn
        self.of_reading = of_reading
        self.asked = asked
        functools.update_wrapper(self, fn)

    def __call__(self, facts: Facts, node: str, reading: NodeObservation | None) -> _T:
        early: EarlyValues | None = facts.beside(EARLY_PER_NODE)
        kept = early.get((self, node)) if early else None
        if kept is not None and (not self.of_reading or (
                reading is not None and kept[0] is reading and kept[1] == reading.revision)):
            return cast(_T, kept[2])
        return self.fn(facts, node, reading)

    def __repr__(self) -> str:
        return f"PerNode({self.fn.__module__}.{self.fn.__qualname__})"


class EarlyParts:
    """Works the parts out for each node as its reading arrives (the node-readings loader feeds
    it and puts ``done`` beside its fact, ``EARLY_PER_NODE``)."""

    def __init__(self, facts: Facts, parts: Iterable[PerNode[Any]]) -> None:
        self.facts = facts
        self.parts = tuple(p for p in dict.fromkeys(parts) if p.asked is None or p.asked(facts))
        self.done: EarlyValues = {}
        #: the detections among the parts' values (a tuple of a check's outcomes), worded
        self.words: dict[int, tuple[Detection, Any]] = {}

    def answered(self, node: str, result: object) -> None:
        if not isinstance(result, NodeObservation):
            return
        for part in self.parts:
            try:
                value = part.fn(self.facts, node, result if part.of_reading else None)
                self.done[(part, node)] = (result, result.revision, value)
                self._word(value)
            except Exception:  # noqa: BLE001 - early is an optimisation: the check works it out at the end
                log.debug("%r for %s not worked out early", part, node, exc_info=True)

    def _word(self, value: object) -> None:
        """The check takes the value's detections as they are (``PerNode``), so their findings
        can be worded now: at 500 nodes ~4 ms less after the last answer."""
        words = self.facts.early_words
        if words is None or not isinstance(value, tuple):
            return
        for d in value:
            if isinstance(d, Detection):
                self.words[id(d)] = (d, words(d))


def of_api(
    asked: Callable[[Facts], bool] | None = None,
) -> Callable[[Callable[[Facts, str, Any], _T]], PerNode[_T]]:
    """A part that rests on the API's facts of one node alone (``PerNode``'s ``of_reading``
    False), worked out early where ``asked``."""
    return lambda fn: PerNode(fn, of_reading=False, asked=asked)


def parts_of(checks: Iterable[Any]) -> list[PerNode[Any]]:
    """The per-node parts of ``checks`` (``Check.per_node``), each once, in order."""
    return list(dict.fromkeys(part for check in checks for part in check.per_node))
