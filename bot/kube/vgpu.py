"""vGPU schedulers (HAMi, tkestack gpu-manager): what their objects say, read from plain API dicts.

HAMi slices NVIDIA cards with its own scheduler: a mutating webhook rewrites a GPU pod's
``spec.schedulerName`` to ``hami-scheduler``; that kube-scheduler asks HAMi's extender, which
places the pod on a card it knows from the node annotation ``hami.io/node-nvidia-register`` (the
device plugin writes it) and keeps alive with the ``hami.io/node-handshake`` exchange
(``Requesting_<time>`` from the scheduler, ``Reported <time>`` from the plugin, ``Deleted_<time>``
when the scheduler gave up on a plugin that stopped answering). tkestack's gpu-manager leaves
scheduling to a kube-scheduler extender, gpu-admission, which marks the pods it placed with
``tencent.com/predicate-node`` and ``tencent.com/predicate-time``.

Nothing here performs I/O; malformed values give ``malformed`` states, never exceptions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import annotations_of, labels_of

Obj = Mapping[str, Any]

HAMI_DEFAULT_SCHEDULER = "hami-scheduler"
#: label on a namespace or pod that HAMi's webhook selectors exclude (value ``ignore``)
HAMI_WEBHOOK_LABEL = "hami.io/webhook"
HAMI_REGISTER = "hami.io/node-nvidia-register"
HAMI_HANDSHAKE = "hami.io/node-handshake"
#: pod annotations HAMi's scheduler writes when it places a pod
HAMI_ASSIGNED_NODE = "hami.io/vgpu-node"
HAMI_BIND_PHASE = "hami.io/bind-phase"
HAMI_DEVICES_ALLOCATED = "hami.io/vgpu-devices-allocated"
#: the node label the HAMi chart's device-plugin DaemonSet selects (devicePlugin.nvidiaNodeSelector)
HAMI_NODE_SELECTOR: dict[str, str] = {"gpu": "on"}

VCUDA_PREDICATE_NODE = "tencent.com/predicate-node"
VCUDA_PREDICATE_TIME = "tencent.com/predicate-time"

_HANDSHAKE = re.compile(r"^\s*(Requesting|Reported|Deleted)[_ ]?(.*)$")


@dataclass(frozen=True)
class Handshake:
    """The ``hami.io/node-handshake`` value taken apart."""

    #: requesting | reported | deleted | missing | malformed
    state: str
    #: the time text as written (HAMi writes local time without a zone), "" when absent
    when: str = ""
    raw: str = ""


def parse_handshake(value: Any) -> Handshake:
    if value is None:
        return Handshake("missing")
    raw = str(value)
    match = _HANDSHAKE.match(raw)
    if match is None:
        return Handshake("malformed", raw=raw)
    return Handshake(match.group(1).lower(), match.group(2).strip(), raw)


@dataclass(frozen=True)
class RegisteredCard:
    """One card of ``hami.io/node-nvidia-register``."""

    uuid: str
    count: int
    memory_mib: int
    cores: int
    type: str
    healthy: bool


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def parse_registration(value: Any) -> list[RegisteredCard] | None:
    """The cards a HAMi device plugin registered, or None when the value cannot be read.

    Two encodings exist: a JSON list of objects (HAMi 2.5 and later) and the older
    ``uuid,count,devmem,devcore,type,numa,health[,index,mode]:`` list. An empty value or an
    empty list is an empty list: the plugin ran and found no card.
    """
    if value is None:
        return None
    text = str(value).strip()
    if not text or text in ("[]", "null"):
        return []
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            return None
        if not isinstance(items, list):
            return None
        cards = []
        for item in items:
            if not isinstance(item, dict) or not item.get("id"):
                return None
            cards.append(RegisteredCard(
                uuid=str(item.get("id")),
                count=_int(item.get("count")) or 0,
                memory_mib=_int(item.get("devmem")) or 0,
                cores=_int(item.get("devcore")) or 0,
                type=str(item.get("type") or ""),
                healthy=item.get("health") is not False,
            ))
        return cards
    cards = []
    for entry in (e for e in text.split(":") if e.strip()):
        fields = [f.strip() for f in entry.split(",")]
        if len(fields) < 7 or not fields[0]:
            return None
        count, memory, cores = _int(fields[1]), _int(fields[2]), _int(fields[3])
        if count is None or memory is None or cores is None:
            return None
        cards.append(RegisteredCard(fields[0], count, memory, cores, fields[4], fields[6].lower() != "false"))
    return cards


@dataclass(frozen=True)
class Registration:
    """Whether HAMi's scheduler can know a node's cards."""

    #: registered | missing | empty | malformed | dropped
    state: str
    cards: tuple[RegisteredCard, ...] = ()
    handshake: Handshake = Handshake("missing")

    @property
    def registered(self) -> bool:
        return self.state == "registered"

    def describe(self) -> str:
        hs = f"; {HAMI_HANDSHAKE}: {self.handshake.raw}" if self.handshake.raw else ""
        if self.state == "registered":
            kinds = sorted({c.type for c in self.cards})
            return f"registered {len(self.cards)} card(s) ({', '.join(kinds)}){hs}"
        if self.state == "dropped":
            return f"HAMi's scheduler dropped its cards at {self.handshake.when or '?'}{hs}"
        return {
            "missing": f"no {HAMI_REGISTER} annotation",
            "empty": f"{HAMI_REGISTER} lists no card",
            "malformed": f"{HAMI_REGISTER} cannot be read",
        }[self.state] + hs


def node_registration(node: Obj) -> Registration:
    """The node's HAMi registration state from its annotations."""
    annotations = annotations_of(node)
    handshake = parse_handshake(annotations.get(HAMI_HANDSHAKE))
    cards = parse_registration(annotations.get(HAMI_REGISTER))
    if HAMI_REGISTER not in annotations:
        return Registration("missing", handshake=handshake)
    if cards is None:
        return Registration("malformed", handshake=handshake)
    if not cards:
        return Registration("empty", handshake=handshake)
    if handshake.state == "deleted":
        return Registration("dropped", tuple(cards), handshake)
    return Registration("registered", tuple(cards), handshake)


def webhook_ignored(obj: Obj | None) -> bool:
    """The object (namespace or pod) carries ``hami.io/webhook: ignore``."""
    labels = labels_of(obj)
    return str(labels.get(HAMI_WEBHOOK_LABEL, "")).strip().lower() == "ignore"


def flag_value(args: Iterable[Any], flag: str) -> str | None:
    """The value of ``--flag=value`` or ``--flag value`` in a command line, the last one winning."""
    words = [str(a) for a in args]
    found = None
    for i, word in enumerate(words):
        if word.startswith(flag + "="):
            found = word.split("=", 1)[1]
        elif word == flag and i + 1 < len(words):
            found = words[i + 1]
    return found


def hami_pod_handled(pod: Obj) -> bool:
    """HAMi's scheduler placed (or started to place) this pod: it left its annotations."""
    annotations = annotations_of(pod)
    return any(k in annotations for k in (HAMI_ASSIGNED_NODE, HAMI_BIND_PHASE, HAMI_DEVICES_ALLOCATED))


def vcuda_predicated(pod: Obj) -> bool:
    """tkestack's gpu-admission placed this pod: it left its predicate annotations."""
    annotations = annotations_of(pod)
    return VCUDA_PREDICATE_NODE in annotations or VCUDA_PREDICATE_TIME in annotations
