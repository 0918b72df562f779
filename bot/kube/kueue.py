"""Reading Kueue's objects: Workload conditions, ClusterQueue quota rows, the admission messages.

Pure functions over the plain dicts the API serves (v1beta1 and v1beta2 field names), so the
check that tells the story stays small. The messages parsed are the flavor assigner's
(kubernetes-sigs/kueue pkg/scheduler/flavorassigner) and the workload controller's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from bot.kube.objects import Obj, meta_of
from bot.kube.resources import quantity_or_none

ZERO = Decimal(0)


def condition(obj: Obj | None, kind: str) -> Obj | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def is_true(obj: Obj | None, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def name_of(obj: Obj | None) -> str:
    meta = meta_of(obj)
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name", "?"))


def cohort_of(cq: Obj | None) -> str:
    spec = (cq or {}).get("spec") or {}
    return str(spec.get("cohort") or spec.get("cohortName") or "")


@dataclass
class QuotaRow:
    """One flavor/resource cell of a ClusterQueue: its limits and what is reserved against it."""

    flavor: str
    resource: str
    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None
    used: Decimal = ZERO
    borrowed: Decimal = ZERO

    @property
    def free(self) -> Decimal:
        return max(ZERO, self.nominal - self.used)


def quota_rows(cq: Obj | None) -> dict[tuple[str, str], QuotaRow]:
    """(flavor, resource) -> row, from spec.resourceGroups and status.flavorsReservation (or Usage)."""
    rows: dict[tuple[str, str], QuotaRow] = {}
    spec, status = (cq or {}).get("spec") or {}, (cq or {}).get("status") or {}
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                key = (str(flavor.get("name")), str(res.get("name")))
                rows[key] = QuotaRow(
                    key[0],
                    key[1],
                    quantity_or_none(res.get("nominalQuota")) or ZERO,
                    quantity_or_none(res.get("borrowingLimit")),
                    quantity_or_none(res.get("lendingLimit")),
                )
    for flavor in status.get("flavorsReservation") or status.get("flavorsUsage") or []:
        for res in flavor.get("resources") or []:
            row = rows.get((str(flavor.get("name")), str(res.get("name"))))
            if row is not None:
                row.used = quantity_or_none(res.get("total")) or ZERO
                row.borrowed = quantity_or_none(res.get("borrowed")) or ZERO
    return rows


def workload_usage(workload: Obj, flavor: str, resource: str) -> Decimal:
    """What an admitted Workload holds of ``resource`` in ``flavor`` (its podSetAssignments)."""
    total = ZERO
    admission = (workload.get("status") or {}).get("admission") or {}
    for ps in admission.get("podSetAssignments") or []:
        if (ps.get("flavors") or {}).get(resource) == flavor:
            total += quantity_or_none((ps.get("resourceUsage") or {}).get(resource)) or ZERO
    return total


def workload_requests(workload: Obj | None) -> dict[str, Decimal]:
    """Total requests of a Workload's pod sets (count x the template's container requests)."""
    out: dict[str, Decimal] = {}
    for ps in ((workload or {}).get("spec") or {}).get("podSets") or []:
        count = Decimal(int(ps.get("count") or 1))
        spec = ((ps.get("template") or {}).get("spec")) or {}
        for ctr in spec.get("containers") or []:
            for res, value in ((ctr.get("resources") or {}).get("requests") or {}).items():
                out[res] = out.get(res, ZERO) + (quantity_or_none(value) or ZERO) * count
    return out


@dataclass(frozen=True)
class Shortfall:
    """One reason the flavor assigner gave: unused_quota, over_max, borrow_limit or not_covered."""

    kind: str
    resource: str = ""
    flavor: str = ""
    more: str = ""
    request: str = ""
    maximum: str = ""
    text: str = ""


_UNUSED = re.compile(
    r"insufficient unused quota for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+), (?P<more>\S+) more needed"
)
_OVER_MAX = re.compile(
    r"insufficient quota for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+), .*?\((?P<req>[^()]+)\) > "
    r"maximum capacity \((?P<max>[^()]+)\)"
)
_BORROW_LIMIT = re.compile(r"borrowing limit for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+) exceeded")
_NOT_COVERED = re.compile(r"resource (?P<res>\S+) unavailable in ClusterQueue")


def shortfalls(message: str) -> list[Shortfall]:
    """Each flavor/resource the pending message names, in its order; [] when none is recognised."""
    out: list[Shortfall] = []
    for part in re.split(r";\s*", message):
        if m := _UNUSED.search(part):
            out.append(Shortfall("unused_quota", m["res"], m["flavor"], more=m["more"], text=part))
        elif m := _OVER_MAX.search(part):
            out.append(Shortfall("over_max", m["res"], m["flavor"], request=m["req"], maximum=m["max"], text=part))
        elif m := _BORROW_LIMIT.search(part):
            out.append(Shortfall("borrow_limit", m["res"], m["flavor"], text=part))
        elif m := _NOT_COVERED.search(part):
            out.append(Shortfall("not_covered", m["res"], text=part))
    return out


def cohort_lendable(queues: Iterable[Obj], flavor: str, resource: str) -> Decimal:
    """What the other ClusterQueues of a cohort could lend of a flavor/resource now."""
    total = ZERO
    for q in queues:
        row = quota_rows(q).get((flavor, resource))
        if row is None:
            continue
        cap = row.lending_limit if row.lending_limit is not None else row.nominal
        total += max(ZERO, min(cap, row.nominal - row.used))
    return total
