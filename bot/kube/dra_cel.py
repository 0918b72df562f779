"""The part of DRA's CEL that device selectors use, evaluated against a ResourceSlice device.

Why: a DeviceClass or a claim request picks devices with CEL (``device.driver == "gpu.nvidia.com"
&& device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"``,
``device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0``). To say which
published devices a claim could get, gpubot evaluates the common subset: ``&&``, ``||``, ``!``,
comparisons, ``in``, ``device.driver``/``attributes``/``capacity``, ``quantity()``/``semver()``
with ``compareTo``/``isGreaterThan``/``isLessThan``, and the string methods ``startsWith``,
``endsWith``, ``contains``, ``matches``, ``lowerAscii``. Anything else raises ``Unsupported``:
the caller says "could not evaluate this selector" rather than guessing. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.kube.resources import quantity_or_none

Obj = Mapping[str, Any]

_TOKEN = re.compile(
    r"""\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<op>&&|\|\||==|!=|<=|>=|[<>!().\[\],])"""
    r"""|(?P<id>[A-Za-z_][A-Za-z0-9_]*))"""
)
_CMP = ("==", "!=", "<", "<=", ">", ">=")
#: the methods evaluated (on quantities and versions, on strings)
METHODS = frozenset({"compareTo", "isGreaterThan", "isLessThan", "lowerAscii", "startsWith", "endsWith",
                     "contains", "matches"})


class Unsupported(Exception):
    """The selector uses CEL gpubot does not evaluate: nothing is concluded from it."""


@dataclass(frozen=True)
class NoSuchKey:
    """A CEL runtime error on this device (an attribute it does not have): carried as a value so
    the rest of the expression is still read; a device it reaches cannot match."""

    why: str


@dataclass(frozen=True)
class Semver:
    """A ``semver()`` value of DRA's CEL: numbers compared part by part, so ``10.0.0`` is above
    ``9.0.0`` where strings would not be."""

    parts: tuple[int, ...]


@dataclass(frozen=True)
class _Domain:
    """``device.attributes["domain"]`` or ``device.capacity["domain"]``."""

    values: dict[str, Any]
    domain: str


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise Unsupported(f"cannot read {text[pos:pos + 12]!r}")
        pos = m.end()
        kind = str(m.lastgroup)
        out.append((kind, m.group(kind)))
    return out


def _attr_value(entry: Any) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    for key in ("string", "int", "bool"):
        if key in entry:
            return int(entry[key]) if key == "int" else entry[key]
    if "version" in entry:
        return _semver(str(entry["version"]))
    if "value" in entry:  # a capacity
        return quantity_or_none(entry["value"])
    raise Unsupported("an attribute of an unknown type")


def _semver(text: str) -> Semver:
    core = re.match(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    if core is None:
        raise Unsupported(f"semver {text!r}")
    return Semver(tuple(int(p or 0) for p in core.groups()))


def _domain(device: Obj, driver: str, field: str, domain: str) -> _Domain:
    """Attributes (or capacities) of ``domain``: qualified names, and the driver's own unqualified ones."""
    raw = device.get(field) or {}
    values: dict[str, Any] = {}
    for key, entry in raw.items():
        d, _, name = str(key).rpartition("/")
        if (d or driver) == domain:
            values[name] = entry
    return _Domain(values, domain)


class _Parser:
    def __init__(self, text: str, device: Obj, driver: str) -> None:
        self.toks, self.i = _tokens(text), 0
        self.device, self.driver = device, driver

    def peek(self) -> str:
        return self.toks[self.i][1] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise Unsupported("the expression ends early")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise Unsupported(f"expected {want!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def run(self) -> bool:
        value = self.or_()
        if self.i != len(self.toks):
            raise Unsupported(f"unexpected {self.peek()!r}")
        if isinstance(value, NoSuchKey):
            return False
        if not isinstance(value, bool):
            raise Unsupported("the selector is not a boolean")
        return value

    # CEL's && and || absorb an error on one side when the other decides: so do these
    def _logic(self, op: str, sub: Callable[[], Any], decide: bool) -> Any:
        results = [sub()]
        while self.peek() == op:
            self.take()
            results.append(sub())
        if len(results) == 1:
            return results[0]
        if any(r is decide for r in results):
            return decide
        errors = [r for r in results if isinstance(r, NoSuchKey)]
        if errors:
            return errors[0]
        if not all(isinstance(r, bool) for r in results):
            raise Unsupported(f"{op} of a non-boolean")
        return not decide

    def or_(self) -> Any:
        return self._logic("||", self.and_, True)

    def and_(self) -> Any:
        return self._logic("&&", self.unary, False)

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            value = self.unary()
            if isinstance(value, NoSuchKey):
                return value
            if not isinstance(value, bool):
                raise Unsupported("! of a non-boolean")
            return not value
        return self.compare()

    def compare(self) -> Any:
        left = self.postfix()
        op = self.peek()
        if op in _CMP:
            self.take()
            right = self.postfix()
            for side in (left, right):
                if isinstance(side, NoSuchKey):
                    return side
            return _compare(op, left, right)
        if op == "in":
            self.take()
            right = self.postfix()
            if isinstance(left, NoSuchKey):
                return left
            if not isinstance(right, _Domain):
                raise Unsupported("'in' over something other than attributes or capacity")
            return left in right.values
        return left

    def postfix(self) -> Any:
        value = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == "[":
                key = self.or_()
                self.take("]")
                value = value if isinstance(value, NoSuchKey) else self.index(value, key)
                continue
            name = self.take()[1]
            if self.peek() == "(":
                args = self.args()
                if name not in METHODS:
                    raise Unsupported(f".{name}()")
                value = value if isinstance(value, NoSuchKey) else self.call(value, name, args)
            elif not isinstance(value, NoSuchKey):
                value = self.member(value, name)
        return value

    def args(self) -> list[Any]:
        self.take("(")
        out = []
        while self.peek() != ")":
            out.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take(")")
        return out

    def primary(self) -> Any:
        kind, text = self.take()
        if kind == "num":
            return Decimal(text) if "." in text else int(text)
        if kind == "str":
            return bytes(text[1:-1], "utf-8").decode("unicode_escape")
        if text == "(":
            value = self.or_()
            self.take(")")
            return value
        if text in ("true", "false"):
            return text == "true"
        if text == "device":
            return self.device
        if kind == "id" and self.peek() == "(":
            args = self.args()
            if text == "quantity" and len(args) == 1 and isinstance(args[0], str):
                q = quantity_or_none(args[0])
                if q is None:
                    raise Unsupported(f"quantity({args[0]!r})")
                return q
            if text == "semver" and len(args) == 1 and isinstance(args[0], str):
                return _semver(args[0])
        raise Unsupported(f"{text!r}")

    def member(self, value: Any, name: str) -> Any:
        if value is self.device:
            if name == "driver":
                return self.driver
            if name in ("attributes", "capacity"):
                return (name, "")
            raise Unsupported(f"device.{name}")
        if isinstance(value, _Domain):
            if name not in value.values:
                return NoSuchKey(f"no {value.domain}/{name} on this device")
            return _attr_value(value.values[name])
        raise Unsupported(f".{name}")

    def index(self, value: Any, key: Any) -> Any:
        if isinstance(value, tuple) and len(value) == 2 and isinstance(key, str):
            return _domain(self.device, self.driver, value[0], key)
        if isinstance(value, _Domain) and isinstance(key, str):
            return self.member(value, key)
        raise Unsupported("an index gpubot does not read")

    def call(self, value: Any, name: str, args: list[Any]) -> Any:
        if isinstance(value, (Decimal, int, Semver)) and not isinstance(value, bool) and len(args) == 1:
            order = _order(value, args[0])
            if name == "compareTo":
                return order
            if name == "isGreaterThan":
                return order > 0
            if name == "isLessThan":
                return order < 0
        if isinstance(value, str):
            if name == "lowerAscii" and not args:
                return value.lower()
            if len(args) == 1 and isinstance(args[0], str):
                if name == "startsWith":
                    return value.startswith(args[0])
                if name == "endsWith":
                    return value.endswith(args[0])
                if name == "contains":
                    return args[0] in value
                if name == "matches":
                    return re.search(args[0], value) is not None
        raise Unsupported(f".{name}()")


def _order(left: Any, right: Any) -> int:
    if isinstance(left, Semver) and isinstance(right, Semver):
        a, b = left.parts, right.parts
    elif isinstance(left, (int, Decimal)) and isinstance(right, (int, Decimal)):
        a, b = Decimal(left), Decimal(right)  # type: ignore[assignment]
    else:
        raise Unsupported("a comparison of different types")
    return (a > b) - (a < b)  # type: ignore[operator]


def _compare(op: str, left: Any, right: Any) -> bool:
    if op in ("==", "!="):
        if isinstance(left, bool) != isinstance(right, bool) or isinstance(left, str) != isinstance(right, str):
            raise Unsupported("== between different types")
        equal = _order(left, right) == 0 if not isinstance(left, (str, bool)) else left == right
        return equal if op == "==" else not equal
    strings = isinstance(left, str) and isinstance(right, str)
    order = (left > right) - (left < right) if strings else _order(left, right)
    return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[op]


def matches(expression: str, device: Obj, driver: str) -> bool:
    """Whether ``expression`` selects ``device`` (a ResourceSlice ``spec.devices`` entry of
    ``driver``). A runtime error (a missing attribute) is no match, as for the scheduler;
    ``Unsupported`` is raised for CEL this module does not evaluate."""
    try:
        return _Parser(expression, device, driver).run()
    except (RecursionError, ValueError, ArithmeticError) as err:
        raise Unsupported(str(err)) from err


def check(expression: str) -> str:
    """"" when gpubot can evaluate ``expression``, else why not (parsed against an empty device)."""
    try:
        matches(expression, {}, "")
    except Unsupported as err:
        return str(err) or "unsupported"
    return ""


__all__ = ["Unsupported", "check", "matches"]
