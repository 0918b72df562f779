"""Server-side printing (``Accept: application/json;as=Table``) for ``kubectl get``.

kubectl asks the API server to render the columns it prints; without this it falls back to
NAME/AGE only. The columns follow the real printers for pods and nodes (a subset); other
kinds get NAME and AGE. Pure formatting of already-stored objects; never changes them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bot.sim.store import Entry, PrinterColumn, ResourceType, dumps


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def human_age(timestamp: str | None, now: datetime | None = None) -> str:
    """The API's HumanDuration: 45s, 12m, 5h, 3d, 2y."""
    if not timestamp:
        return "<unknown>"
    try:
        when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    seconds = int(((now or datetime.now(UTC)) - when).total_seconds())
    if seconds < 0:
        return "<invalid>"
    for limit, unit, size in ((120, "s", 1), (7200, "m", 60), (172800, "h", 3600), (63072000, "d", 86400)):
        if seconds < limit:
            return f"{seconds // size}{unit}"
    return f"{seconds // 31536000}y"


def _pod_status(obj: dict[str, Any]) -> str:
    status = obj.get("status") or {}
    if obj["metadata"].get("deletionTimestamp"):
        return "Terminating"
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state and state["terminated"].get("reason"):
            reason = state["terminated"]["reason"]
    return str(reason)


def _pod_cells(obj: dict[str, Any]) -> list[Any]:
    status = obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len((obj.get("spec") or {}).get("containers") or [])
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount", 0)) for cs in statuses)
    age = human_age(obj["metadata"].get("creationTimestamp"))
    node = (obj.get("spec") or {}).get("nodeName") or "<none>"
    return [
        obj["metadata"]["name"],
        f"{ready}/{total}",
        _pod_status(obj),
        restarts,
        age,
        status.get("podIP") or "<none>",
        node,
    ]


def _node_cells(obj: dict[str, Any]) -> list[Any]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    state = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    version = ((obj.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    age = human_age(obj["metadata"].get("creationTimestamp"))
    return [obj["metadata"]["name"], state, ",".join(roles) or "<none>", age, version]


def _column(name: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "name" if name == "Name" else "",
        "description": "",
        "priority": priority,
    }


_COLUMNS = {
    "Pod": [
        _column("Name"),
        _column("Ready"),
        _column("Status"),
        _column("Restarts", "integer"),
        _column("Age"),
        _column("IP", priority=1),
        _column("Node", priority=1),
    ],
    "Node": [_column("Name"), _column("Status"), _column("Roles"), _column("Age"), _column("Version")],
}
_CELLS = {"Pod": _pod_cells, "Node": _node_cells}


def _field(obj: Any, json_path: str) -> Any:
    """The value at a dotted ``.spec.action`` path, or None (a CRD printer column's JSONPath)."""
    for part in json_path.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _custom_cell(value: Any, column: PrinterColumn, now: datetime | None) -> Any:
    if value is None:
        return None
    if column.type == "date":
        return human_age(str(value), now)
    return value


def _custom(rtype: ResourceType, now: datetime | None) -> tuple[list[dict[str, Any]], Callable[[Any], list[Any]]]:
    """NAME then the CRD's ``additionalPrinterColumns``, as the API server prints custom resources."""
    columns = [_column("Name"), *(_column(c.name, c.type) for c in rtype.columns)]

    def cells(obj: dict[str, Any]) -> list[Any]:
        return [obj["metadata"]["name"], *(_custom_cell(_field(obj, c.json_path), c, now) for c in rtype.columns)]

    return columns, cells


def table(rtype: ResourceType, entries: list[Entry], meta: dict[str, Any], now: datetime | None = None) -> bytes:
    """A meta.k8s.io/v1 Table whose rows carry the full objects (kubectl reads their metadata).

    ``now`` is the server's clock (ages); None: this host's.
    """
    if rtype.columns:
        columns, cells = _custom(rtype, now)
    else:
        columns = _COLUMNS.get(rtype.kind, [_column("Name"), _column("Age")])
        cells = _CELLS.get(
            rtype.kind, lambda o: [o["metadata"]["name"], human_age(o["metadata"].get("creationTimestamp"), now)]
        )
    head = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns}
    rows = [b'{"cells":' + dumps(cells(e.obj)) + b',"object":' + e.raw + b"}" for e in entries]
    return dumps(head)[:-1] + b',"rows":[' + b",".join(rows) + b"]}"
