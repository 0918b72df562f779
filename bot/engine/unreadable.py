"""What could not be read, as findings: one per kind of failure, naming every read it cost.

A read that failed is not "nothing there": the checks resting on it did not run (``runner``), and
the report says first what it could not read and why. The API server being out of reach (refused,
DNS, reset, TLS, a server that accepts and never answers) is ``API_UNREACHABLE``; a 403 is
``READ_FORBIDDEN`` with the RBAC rule that would grant each refused read; a 401, a 5xx or 429
that outlasted the retries, or a broken loader is ``READ_FAILED``. Words, rank and next steps are
the catalogue's (runbooks/findings.yaml); these findings never offer a fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NotRequired, TypedDict

from bot.engine.check import Code, Detection
from bot.report import Unreadable


class ReadsFailed(TypedDict):
    reads: str
    server: str
    error: str
    count: int
    rbac: NotRequired[str]


API_UNREACHABLE = Code("API_UNREACHABLE", ReadsFailed)
READ_FORBIDDEN = Code("READ_FORBIDDEN", ReadsFailed)
READ_FAILED = Code("READ_FAILED", ReadsFailed)
#: failure class -> finding code
CODE_OF: dict[str, Code[ReadsFailed]] = {
    "unreachable": API_UNREACHABLE,
    "tls": API_UNREACHABLE,
    "timeout": API_UNREACHABLE,
    "forbidden": READ_FORBIDDEN,
    "unauthorized": READ_FAILED,
}
#: every code this module emits (the views put their verdict first)
CODES: tuple[Code[ReadsFailed], ...] = (API_UNREACHABLE, READ_FORBIDDEN, READ_FAILED)
#: how a class of failure reads when its reads failed with different details
_KIND_WORDS = {
    "unreachable": "unreachable",
    "tls": "TLS failure",
    "timeout": "no answer",
    "forbidden": "403 Forbidden",
    "unauthorized": "401 Unauthorized: the server rejected the credentials",
    "failed": "error answers",
    "not_found": "404 Not Found",
    "internal": "internal error",
}


def code_of(kind: str) -> Code[ReadsFailed]:
    return CODE_OF.get(kind, READ_FAILED)


def unique(failures: Iterable[Unreadable]) -> list[Unreadable]:
    """Each failed read once, in the order they failed."""
    out: list[Unreadable] = []
    for f in failures:
        if f not in out:
            out.append(f)
    return out


def what_failed(failures: Sequence[Unreadable]) -> str:
    """``pods, nodes``: the resources (or, without a request, the facts) the failures cost."""
    names: list[str] = []
    for f in failures:
        name = f.request.resource if f.request is not None else f.read
        if name not in names:
            names.append(name)
    return ", ".join(names)


def _error(failures: Sequence[Unreadable]) -> str:
    details = {f.detail for f in failures}
    if failures[0].error == "forbidden":  # each read's own refusal goes into the evidence
        return _KIND_WORDS["forbidden"]
    return details.pop() if len(details) == 1 else _KIND_WORDS.get(failures[0].error, failures[0].error)


def rbac_rules(failures: Iterable[Unreadable]) -> str:
    """The RBAC rules that would grant the refused reads, as YAML an operator can paste.

    Reads across every namespace and of cluster-scoped objects need a ClusterRole; reads in one
    namespace a Role there. One rule per (scope, API group, resource), verbs merged.
    """
    rules: dict[tuple[str, str, str], list[str]] = {}
    for f in failures:
        r = f.request
        if r is None:
            continue
        verbs = rules.setdefault((r.namespace, r.group, r.resource), [])
        if r.verb not in verbs:
            verbs.append(r.verb)
    lines: list[str] = []
    for (namespace, group, resource), verbs in rules.items():
        where = f"# Role in namespace {namespace}" if namespace else "# ClusterRole"
        lines += [
            where,
            f'- apiGroups: ["{group}"]',
            f'  resources: ["{resource}"]',
            "  verbs: [" + ", ".join(f'"{v}"' for v in verbs) + "]",
        ]
    return "\n".join(lines)


def detections(failures: Iterable[Unreadable]) -> list[Detection]:
    """One finding per code and class of failure (and server), naming every read it affected."""
    groups: dict[tuple[Code[ReadsFailed], str, str], list[Unreadable]] = {}
    for f in unique(failures):
        groups.setdefault((code_of(f.error), f.error, f.server), []).append(f)
    out: list[Detection] = []
    for (code, kind, server), members in groups.items():
        evidence = [f"{f.read}: {f.detail}" for f in members]
        params: ReadsFailed = {
            "reads": what_failed(members),
            "server": server or "the API server",
            "error": _error(members),
            "count": len(members),
        }
        if kind == "forbidden":
            params["rbac"] = rbac_rules(members) or "# (the refused reads are in the evidence)"
        out.append(code.detect(f"api/{server or 'cluster'}", params, evidence=evidence))
    return out


def incomplete_line(failures: Sequence[Unreadable]) -> str:
    """The sentence a report opens with when reads failed: ``Could not read pods from URL: why``
    (one clause per code and class of failure)."""
    groups: dict[tuple[str, str], list[Unreadable]] = {}
    for f in unique(failures):
        groups.setdefault((f.error, f.server), []).append(f)
    clauses = []
    for (_, server), members in groups.items():
        source = f" from {server}" if server else ""
        clauses.append(f"Could not read {what_failed(members)}{source}: {_error(members)}")
    return "; ".join(clauses) + ("." if clauses else "")
