"""Every template of a finding checked against the parameters its code declares.

A check declares each code it emits with a ``TypedDict`` of the code's parameters
(``bot.engine.check.Code``); the catalogue binds to them by name: ``{node}`` in a text, ``when:
node``, ``each: holders`` (a list of mappings whose keys fill the offer). A name that does not
match would only show up when a scenario ran (an offer silently missing, ``{nodez}`` printed
verbatim), so ``gpubot runbooks validate`` compares them statically, one ``file:line`` each.
Codes no check declares (a test's plain-string check) are not checked here.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.engine.check import Check, Code
from bot.engine.runbook_text import template_fields
from bot.engine.unreadable import CODES
from bot.yamlio.marks import YamlPath

#: parameters the runner adds to every finding's (``{gpubot}``: the command prefix)
GLOBAL_PARAMS = frozenset({"gpubot"})


class _Doc(typing.Protocol):
    source: str

    def err(self, path: YamlPath, message: str) -> None: ...


@dataclass(frozen=True)
class Declared:
    """The parameters one code's detections carry, as the validator needs them."""

    where: str
    names: frozenset[str]
    #: list parameters of mappings (what ``each:`` may name) -> the keys of their items
    lists: Mapping[str, frozenset[str]]


_DECLARED: dict[type, Declared] = {}


def declaration(code: Code[Any]) -> Declared:
    """What ``code``'s ``TypedDict`` declares: its keys, and the item keys of its list-of-mapping keys."""
    # per TypedDict class, once: the bot validates its runbooks at every start and reload
    found = _DECLARED.get(code.params)
    if found is None:
        found = _DECLARED[code.params] = _declared(code.params)
    return found


def _declared(params: type) -> Declared:
    hints = typing.get_type_hints(params)
    lists: dict[str, frozenset[str]] = {}
    for name, hint in hints.items():
        args = typing.get_args(hint)
        if typing.get_origin(hint) in (list, tuple) and args and typing.is_typeddict(args[0]):
            lists[name] = frozenset(typing.get_type_hints(args[0]))
    where = params.__module__.replace(".", "/") + ".py"
    return Declared(where, frozenset(hints), lists)


def declarations(codes: Iterable[str]) -> dict[str, Declared]:
    """The declaration of every code in ``codes`` that carries one (``Code``), by code."""
    return {str(c): declaration(c) for c in codes if isinstance(c, Code)}


def check_codes(checks: Mapping[str, Check]) -> list[str]:
    """Every code the checks emit, plus those the runner itself emits (what could not be read)."""
    return [*CODES, *(code for check in checks.values() for code in check.emits)]


def check_params(
    doc: _Doc, findings: object, declared: Mapping[str, Declared], placeholders: frozenset[str] = frozenset()
) -> None:
    """Report every placeholder, ``when``/``when_not``/``each`` and offer parameter of the
    catalogue's ``findings`` mapping that the code's declaration does not have.

    A name missing from the catalogue's own ``placeholders`` list is left to the schema, which
    already reports it: one typo, one line.
    """
    if not isinstance(findings, dict):
        return  # the schema reports it
    for code, entry in findings.items():
        decl = declared.get(str(code))
        if decl is None or not isinstance(entry, dict):
            continue
        path: YamlPath = ("findings", str(code))
        _Entry(doc, str(code), decl, placeholders).check(entry, path)


@dataclass(frozen=True)
class _Entry:
    """One finding's catalogue entry with the parameters its code declares, checked together so a
    misspelt placeholder is reported at its ``file:line`` rather than printed to a user."""

    doc: _Doc
    code: str
    decl: Declared
    placeholders: frozenset[str]

    def check(self, entry: Mapping[Any, Any], path: YamlPath) -> None:
        for key in ("title", "explanation"):
            self.text(entry.get(key), (*path, key), self.decl.names)
        steps = entry.get("next_steps")
        for i, step in enumerate(steps if isinstance(steps, list) else []):
            spath = (*path, "next_steps", i)
            if isinstance(step, dict):  # {step: text, when: param}
                self.conditions(step, spath)
                self.text(step.get("step"), (*spath, "step"), self.decl.names)
            else:
                self.text(step, spath, self.decl.names)
        offers = entry.get("offers")
        for i, offer in enumerate(offers if isinstance(offers, list) else []):
            if isinstance(offer, dict):
                self.offer(offer, (*path, "offers", i))

    def conditions(self, item: Mapping[Any, Any], path: YamlPath) -> None:
        """An offer's or a step's ``when``/``when_not``: parameters the code declares."""
        for key in ("when", "when_not"):
            value = item.get(key)
            if isinstance(value, str) and value and value not in self.decl.names:
                self.unknown(value, (*path, key), self.decl.names, f"'{key}' names")

    def offer(self, offer: Mapping[Any, Any], path: YamlPath) -> None:
        names = self.decl.names
        self.conditions(offer, path)
        each = offer.get("each")
        if isinstance(each, str) and each:
            if each in self.decl.lists:
                names = names | self.decl.lists[each]
            elif each in names:
                self.doc.err(
                    (*path, "each"),
                    f"'each: {each}' needs a list of mappings; {self.code} declares '{each}' as something "
                    f"else ({self.decl.where})",
                )
            else:
                lists = frozenset(self.decl.lists)
                self.unknown(each, (*path, "each"), names, "'each' names", suggest_from=lists or names)
            if each not in self.decl.lists:
                return  # the offer's templates read the items: one wrong 'each', one line
        self.text(offer.get("summary"), (*path, "summary"), names)
        params = offer.get("params")
        for key, value in (params.items() if isinstance(params, dict) else ()):
            self.text(value, (*path, "params", str(key)), names)

    def text(self, value: object, path: YamlPath, names: frozenset[str]) -> None:
        if not isinstance(value, str):
            return
        for field in dict.fromkeys(template_fields(value)):
            if field not in names and field not in GLOBAL_PARAMS:
                self.unknown(field, path, names, "placeholder", braces=True)

    def unknown(
        self,
        name: str,
        path: YamlPath,
        names: frozenset[str],
        what: str,
        *,
        braces: bool = False,
        suggest_from: frozenset[str] | None = None,
    ) -> None:
        if self.placeholders and name not in self.placeholders:
            return  # the schema's "unknown placeholder" line covers it
        shown = f"'{{{name}}}'" if braces else f"'{name}'"
        close = difflib.get_close_matches(name, sorted(suggest_from or names), n=1, cutoff=0.6)
        if not close and suggest_from is not None and len(suggest_from) == 1:
            close = sorted(suggest_from)  # the only list the offer could repeat over
        hint = ""
        if close:
            hint = f"; did you mean '{{{close[0]}}}'?" if braces else f"; did you mean '{close[0]}'?"
        self.doc.err(
            path,
            f"{what} {shown}: {self.code} has no such parameter "
            f"({self.decl.where} declares {', '.join(sorted(names))}){hint}",
        )
