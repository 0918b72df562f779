"""Which API permissions gpubot needs, by component, derived from its own source.

``bot.doctor.kube_calls`` finds every official-client call in the package; this module sorts them
the way the Helm chart grants them, so the chart's RBAC tests and ``gpubot doctor`` read one
answer:

- ``reads``: everything outside ``bot/actions``, the simulator and the state modules, except exec:
  the read-only ClusterRole, checked cluster-wide;
- ``exec``: exec into gpubot's own node agents (the Role in the release namespace), needed with
  ``node_access: agent``;
- ``state``: gpubot's own objects and Leases (``state: kubernetes``), in the release namespace;
- ``remediation``: what ``bot/actions`` calls (the opt-in remediation component); its exec is into
  the actuator in the release namespace, the rest cluster-wide.

Permissions every authenticated identity holds (``system:basic-user``: asking the API server what
one may do) are never "needed": no gpubot role grants them, and doctor needs them to ask at all.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from bot.doctor.kube_calls import Perm, Use, needed, scan_tree
from bot.kept import KeptFile
from bot.kube.custom_resources import CUSTOM_READS
from bot.state.kube import APPEND_ONLY, GROUP, PLURALS, WITH_STATUS

#: the package root: the scan reads the installed sources, wherever gpubot is installed
BOT = Path(__file__).resolve().parents[1]
ACTIONS = BOT / "actions"
#: the simulator serves the API; method names there are routes, not calls against a cluster
SIM = BOT / "sim"
#: gpubot's own state on the API (``state: kubernetes``): the gpubot-state Role in its namespace
STATE: tuple[Path, ...] = (BOT / "state",)
EXEC_RESOURCE = ("", "pods/exec")
#: granted to every authenticated user by the API server's own ``system:basic-user`` ClusterRole
BASIC_USER = frozenset(
    {
        Perm("create", "authorization.k8s.io", "selfsubjectaccessreviews"),
        Perm("create", "authorization.k8s.io", "selfsubjectrulesreviews"),
    }
)


def _under(use: Use, *roots: Path) -> bool:
    path = BOT.parent / use.path
    return any(path == r or path.is_relative_to(r) for r in roots)


Scan = tuple[tuple[Use, ...], tuple[str, ...]]

#: the scan kept between processes (bot/kept.py): parsing every module costs about 1.6 s, on
#: every ``gpubot doctor``, and its answer changes only with gpubot's code or the client's version
_KEPT = KeptFile(__file__, "scan")


def _scan_key() -> tuple[str, str]:
    """What the scan depends on besides gpubot's modules: where they are, and the official client
    (its generated sources give each method's URL)."""
    import kubernetes

    return str(BOT), str(getattr(kubernetes, "__version__", ""))


def _scan() -> Scan:
    uses, problems = scan_tree(BOT, relative_to=BOT.parent)
    return tuple(uses), tuple(problems)


@functools.cache
def scanned() -> Scan:
    """Every official-client call in the package, and the calls the scan could not attribute."""
    key = _scan_key()
    kept: Scan | None = _KEPT.load(key)
    if kept is not None:
        return kept
    found = _scan()
    _KEPT.save(key, found)
    return found


def keep_scan() -> None:
    """Scan now and keep the result even under ``PYTHONDONTWRITEBYTECODE`` (``bot.precompile``)."""
    _KEPT.save(_scan_key(), _scan(), always=True)


@dataclass(frozen=True)
class Needs:
    """The permissions of each component, each with the places in the code that need it."""

    reads: dict[Perm, list[str]]
    exec: dict[Perm, list[str]]
    state: dict[Perm, list[str]]
    remediation: dict[Perm, list[str]]


def _split_exec(perms: dict[Perm, list[str]]) -> tuple[dict[Perm, list[str]], dict[Perm, list[str]]]:
    plain = {p: w for p, w in perms.items() if (p.group, p.resource) != EXEC_RESOURCE}
    execs = {p: w for p, w in perms.items() if (p.group, p.resource) == EXEC_RESOURCE}
    return plain, execs


def _custom_reads(perms: dict[Perm, list[str]]) -> dict[Perm, list[str]]:
    """The read facade's custom-object calls as the custom resources it may read
    (``bot.kube.custom_resources``, which the facade enforces)."""
    out: dict[Perm, list[str]] = {}
    for perm, where in perms.items():
        if perm.group != "{group}":
            out[perm] = where
            continue
        for group, plurals in CUSTOM_READS.items():
            for plural in plurals:
                out.setdefault(Perm(perm.verb, group, plural), []).extend(where)
    return out


def _custom_objects(perms: dict[Perm, list[str]]) -> dict[Perm, list[str]]:
    """The custom-object calls (``{group}/{plural}`` in their URL) as the state kinds they reach."""
    out: dict[Perm, list[str]] = {}
    for perm, where in perms.items():
        if perm.group != "{group}":
            out[perm] = where
            continue
        status = perm.resource.endswith("/status")
        for plural in WITH_STATUS if status else PLURALS:
            if perm.verb in ("update", "patch", "delete") and plural in APPEND_ONLY:
                continue
            out.setdefault(Perm(perm.verb, GROUP, plural + ("/status" if status else "")), []).extend(where)
    return out


@functools.cache
def needs() -> Needs:
    """What each component needs, from the scan of the installed sources."""
    uses = [u for u in scanned()[0] if not _under(u, SIM)]
    outside = [u for u in uses if not _under(u, ACTIONS, *STATE)]
    reads, execs = _split_exec({p: w for p, w in _custom_reads(needed(outside)).items() if p not in BASIC_USER})
    state = _custom_objects(needed([u for u in uses if _under(u, *STATE)]))
    remediation = needed([u for u in uses if _under(u, ACTIONS)])
    return Needs(reads=reads, exec=execs, state=state, remediation=remediation)
