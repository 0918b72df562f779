"""What a pod's DRA ResourceClaims (resource.k8s.io) say about why it waits, from the pod alone.

The pod names its claims in ``spec.resourceClaims`` (a ResourceClaim, or a ResourceClaimTemplate
the controller turns into one, recorded in ``status.resourceClaimStatuses``). The scheduler's
DynamicResources plugin says ``cannot allocate all claims`` when no node's ResourceSlices offer
devices that satisfy them, and ``resourceclaim "X" not found`` or ``waiting for dynamic resource
controller to create the resourceclaim`` when the claim does not exist yet. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]

#: (pattern, why) over the scheduler's or kubelet's text, first match wins
WHY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"device class \"?(?P<name>[\w.-]+)\"? (?:does not exist|not found)", re.I), "class_missing"),
    (re.compile(r"waiting for (?:the )?dynamic resource controller to create the resourceclaim"
                r"|resourceclaim \"?[\w.-]*\"? not found|resource claim \S* not found", re.I), "claim_missing"),
    (re.compile(r"cannot allocate all claims|unbound immediate resourceclaims?|cannot allocate", re.I), "allocate"),
    (re.compile(r"failed to prepare dynamic resources|NodePrepareResources|prepare resource claims?", re.I),
     "prepare"),
)


@dataclass(frozen=True)
class PodClaim:
    """One of a pod's resource claims with the ResourceClaim it resolves to, so a finding can name the
    claim the user wrote as well as the object the scheduler waits for."""

    name: str
    #: "ResourceClaim NAME" or "ResourceClaimTemplate NAME (claim NAME)"
    source: str
    claim: str


def pod_claims(pod: Obj) -> list[PodClaim]:
    """The pod's claims: its own name for each, where it comes from, the ResourceClaim it resolves to."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    made = {str(s.get("name")): str(s.get("resourceClaimName") or "") for s in status.get("resourceClaimStatuses") or []
            if isinstance(s, Mapping)}
    out = []
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, Mapping):
            continue
        nested = entry.get("source")
        source: Obj = nested if isinstance(nested, Mapping) else entry  # before 1.31 the names sat under source
        name = str(entry.get("name") or "")
        if source.get("resourceClaimName"):
            claim = str(source["resourceClaimName"])
            out.append(PodClaim(name, f"ResourceClaim {claim}", claim))
        elif source.get("resourceClaimTemplateName"):
            template, claim = str(source["resourceClaimTemplateName"]), made.get(name, "")
            made_from = f" (claim {claim})" if claim else " (no ResourceClaim made from it yet)"
            out.append(PodClaim(name, f"ResourceClaimTemplate {template}{made_from}", claim))
    return out


def why(text: str) -> tuple[str, str]:
    """(why, device class named) from one scheduler or kubelet message; ("", "") when not about DRA."""
    for pattern, reason in WHY:
        match = pattern.search(text or "")
        if match is not None:
            return reason, str(match.groupdict().get("name") or "")
    return "", ""
