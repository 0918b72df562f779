"""Derive the RBAC permissions gpubot's code needs from its calls into the official client.

Nothing here is a hand-kept list. A method counts as used when its name appears in a module as an
attribute (``core.read_namespaced_pod(...)`` or ``self._core.list_node`` passed as a function)
or as a whole string constant (``("CoreV1Api", "read_namespaced_pod")`` in a dispatch table)
and the official ``kubernetes.client`` has an API class with that method. The HTTP method and
URL the client itself would send (read from the method's generated ``_serialize`` source) give
the API group, resource and subresource; the method's prefix gives the RBAC verb. A module that
uses ``watch.Watch`` also needs ``watch`` on everything it lists.

This module only reads source files; it never imports the scanned code. The chart's RBAC tests
(tests/deploy/test_rbac.py) check the roles against it, and ``gpubot doctor`` asks the API server
about the very same permissions (``bot.doctor.needs``): one source for what gpubot may need.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s_client

#: the official client's naming: verb, optional namespaced_, resource, optional _for_all_namespaces
METHOD_RE = re.compile(
    r"^(read|list|watch|create|patch|replace|delete|delete_collection|connect_get|connect_post|"
    r"connect_put|connect_patch|connect_delete|connect_head|connect_options)_"
    r"(namespaced_)?[a-z][a-z0-9_]*?(_for_all_namespaces)?$"
)
_SERIALIZE_RE = re.compile(r"method='([A-Z]+)',\s*resource_path='([^']+)'")
#: the older generator (kubernetes < 37): ``call_api('/api/v1/...', 'GET', ...)`` in *_with_http_info
_CALL_API_RE = re.compile(r"call_api\(\s*'([^']+)',\s*'([A-Z]+)'")
#: subresources whose WebSocket GET an API server >= 1.31 authorizes as ``create``, older as ``get``
_STREAMING = {"exec", "attach", "portforward"}
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True, order=True)
class Perm:
    """One RBAC permission: verb on group/resource (resource may be ``pods/exec``)."""

    verb: str
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.verb} {self.group or 'core'}/{self.resource}"


@dataclass(frozen=True, order=True)
class Use:
    """Where a client method is named, and what it needs."""

    path: str
    line: int
    api_class: str
    method: str
    perms: frozenset[Perm]


@functools.cache
def api_classes() -> dict[str, type]:
    """Every generated API class of the official client, by name."""
    # the client package loads its members lazily: ``dir`` lists them, ``vars`` does not
    names = [n for n in dir(k8s_client) if n.endswith("Api") and n != "ApiClient"]
    return {n: obj for n in names if inspect.isclass(obj := getattr(k8s_client, n))}


@functools.cache
def candidates(method: str) -> tuple[str, ...]:
    """API classes that define ``method``."""
    if not METHOD_RE.match(method):
        return ()
    return tuple(sorted(n for n, cls in api_classes().items() if callable(getattr(cls, method, None))))


@functools.cache
def endpoint(api_class: str, method: str) -> tuple[str, str]:
    """(HTTP method, URL template) the client sends for ``api_class.method``."""
    cls = api_classes()[api_class]
    serialize = getattr(cls, f"_{method}_serialize", None)
    if serialize is None:  # older client layout: the path sits in *_with_http_info
        serialize = getattr(cls, f"{method}_with_http_info")
    source = inspect.getsource(serialize)
    if found := _SERIALIZE_RE.search(source):
        return found.group(1), found.group(2)
    if found := _CALL_API_RE.search(source):
        return found.group(2), found.group(1)
    raise ValueError(f"cannot find the URL of {api_class}.{method} in the client source")


def parse_path(url: str) -> tuple[str, str]:
    """(group, resource[/subresource]) of an API URL template."""
    parts = url.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        raise ValueError(f"not a resource URL: {url}")
    if rest and rest[0] == "watch":
        rest = rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[1] == "{namespace}":
        rest = rest[2:]
    resource = rest[0]
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    return group, resource


def perms_of(api_class: str, method: str, *, watches: bool) -> frozenset[Perm]:
    """The RBAC permissions one client method needs."""
    http, url = endpoint(api_class, method)
    group, resource = parse_path(url)
    prefix = METHOD_RE.match(method)
    assert prefix is not None
    kind = prefix.group(1)
    verbs: set[str]
    if kind == "read":
        verbs = {"get"}
    elif kind == "list":
        verbs = {"list", "watch"} if watches else {"list"}
    elif kind == "watch":
        verbs = {"watch"}
    elif kind == "replace":
        verbs = {"update"}
    elif kind == "delete_collection":
        verbs = {"deletecollection"}
    elif kind.startswith("connect_"):
        sub = resource.partition("/")[2]
        if sub in _STREAMING:
            verbs = {"create", "get"} if http == "GET" else {"create"}
        else:
            verbs = {"get"} if http in ("GET", "HEAD", "OPTIONS") else {"create"}
    else:
        verbs = {kind}
    return frozenset(Perm(v, group, resource) for v in verbs)


class _Names(ast.NodeVisitor):
    """Collects candidate method names, API class mentions and watch use in one module."""

    def __init__(self) -> None:
        self.names: list[tuple[int, str]] = []
        self.mentions: set[str] = set()
        self.watches = False

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._name(node.lineno, node.attr)
        if node.attr == "Watch":
            self.watches = True
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in api_classes():
            self.mentions.add(node.id)
        if node.id == "Watch":
            self.watches = True

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            if node.value in api_classes():
                self.mentions.add(node.value)
            self._name(node.lineno, node.value)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg == "watch" and isinstance(node.value, ast.Constant) and node.value.value is True:
            self.watches = True
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name in api_classes():
                self.mentions.add(alias.name)
            if alias.name == "Watch":
                self.watches = True

    def _name(self, line: int, name: str) -> None:
        name = name.removesuffix("_with_http_info")  # the same call, answering with the headers too
        if name in api_classes():
            self.mentions.add(name)
        elif candidates(name):
            self.names.append((line, name))


#: a word of the source: an attribute or a whole string constant naming a client method is one
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _names_a_method(source: str) -> bool:
    """Whether any word of ``source`` is a client method's name: only such a module can have a
    use, and most have none (parsing every module took a second of each scan; this, a tenth)."""
    return any(candidates(word.removesuffix("_with_http_info")) for word in set(_WORD.findall(source)))


def scan_source(source: str, path: str = "<string>") -> tuple[list[Use], list[str]]:
    """Uses found in one module, and problems (a method several API classes define, with none of
    them named in the module, cannot be attributed: the test reports it instead of guessing)."""
    if not _names_a_method(source):
        return [], []
    visitor = _Names()
    visitor.visit(ast.parse(source, filename=path))
    uses: list[Use] = []
    problems: list[str] = []
    for line, method in visitor.names:
        classes = candidates(method)
        if len(classes) > 1:
            classes = tuple(c for c in classes if c in visitor.mentions) or classes
        if len(classes) != 1:
            problems.append(
                f"{path}:{line}: {method} exists on {', '.join(classes)}; name the API class in this module"
            )
            continue
        perms = perms_of(classes[0], method, watches=visitor.watches)
        uses.append(Use(path, line, classes[0], method, perms))
    return uses, problems


def scan_tree(root: Path, *, relative_to: Path | None = None) -> tuple[list[Use], list[str]]:
    """Uses in every ``*.py`` under ``root``."""
    uses: list[Use] = []
    problems: list[str] = []
    for file in sorted(root.rglob("*.py")):
        shown = str(file.relative_to(relative_to)) if relative_to else str(file)
        u, p = scan_source(file.read_text(encoding="utf-8"), shown)
        uses.extend(u)
        problems.extend(p)
    return uses, problems


def needed(uses: list[Use]) -> dict[Perm, list[str]]:
    """Each needed permission with the places that need it."""
    out: dict[Perm, list[str]] = {}
    for use in uses:
        for perm in use.perms:
            out.setdefault(perm, []).append(f"{use.path}:{use.line} {use.method}")
    return out
