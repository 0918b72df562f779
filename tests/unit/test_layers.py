"""The package boundaries of README.md ("How it is built"), checked on the import graph (an
import-linter in a test).

slack/cli → service → engine → probes; remediation → actions → probes; nothing but actions
writes. The simulator never imports the synthetic-cluster generators (bot.synth), which build
data and import no simulator. The remediation package knows no Slack, and its decision layer
(flow, policy, store, audit, ids) knows neither the actions nor a Kubernetes client. No module
imports itself back through others, and no package imports itself back through another package
(``bot.settings`` importing ``bot.proactive`` while ``bot.proactive`` imports ``bot.settings``). A
module that imports across a forbidden edge fails here with the offending line.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[2] / "bot"
#: the design text this module's docstring cites
DESIGN = (BOT.parent / "README.md", "## How it is built")

#: the composition roots: they wire the packages together, so no package may import them
ROOTS = ("bot.cli", "bot.demo", "bot.oneshot", "bot.server", "bot.wiring")
#: remediation's decision layer: what may happen and what did, independent of any action or client
DECISION = ("flow", "journal", "outcomes", "policy", "audit")

#: package or module → prefixes it must never import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # pure Kubernetes logic: plain dicts in, answers out
    "bot.kube": ("bot.engine", "bot.probes", "bot.actions", "bot.slack", "bot.service", "bot.remediation", "bot.sim",
                 *ROOTS),
    "bot.probes": ("bot.engine", "bot.actions", "bot.slack", "bot.service", "bot.remediation", *ROOTS),
    # a check reads facts and yields detections: it never reaches a client or another surface
    "bot.engine.checks": ("bot.engine.gather", "bot.engine.runner", "bot.probes.kube", "bot.probes.ssh",
                          "bot.probes.exec", "kubernetes", "asyncssh"),
    "bot.engine": ("bot.actions", "bot.slack", "bot.service", "bot.remediation", *ROOTS),
    # actions are what gets confirmed; they never know who confirms them
    "bot.actions": ("bot.slack", "bot.engine.checks", "bot.remediation", *ROOTS),
    # a Slack-free package: views word its outcomes; it takes cluster clients from its caller
    "bot.remediation": (
        "slack_sdk", "slack_bolt", "bot.slack", "bot.engine", "bot.service", "bot.probes.clients", "bot.sim", *ROOTS
    ),
    **{
        f"bot.remediation.{name}": ("bot.actions", "bot.probes", "kubernetes", "asyncssh")
        for name in DECISION
    },
    # Slack renders and forwards; action metadata reaches it as plain data through remediation
    "bot.slack": ("bot.actions", "bot.service", *ROOTS),
    # the watch decides what to post; Slack posts it, and it never acts
    "bot.proactive": ("slack_sdk", "slack_bolt", "bot.slack", "bot.actions", "bot.remediation", "bot.service",
                      "bot.sim", *ROOTS),
    # the simulator serves any scenario; the benchmark's generators (bot.synth) only build its data
    "bot.sim": ("bot.actions", "bot.slack", "bot.engine", "bot.service", "bot.remediation", "bot.synth"),
    "bot.synth": ("bot.sim", "bot.actions", "bot.slack", "bot.engine", "bot.probes", "bot.service",
                  "bot.remediation", *ROOTS),
    # state keeps records for every feature and knows none of them: they all import it, never the reverse
    "bot.state": ("slack_sdk", "slack_bolt", "bot.slack", "bot.engine", "bot.probes", "bot.actions", "bot.remediation",
                  "bot.proactive", "bot.service", "bot.probes.clients", "bot.sim", *ROOTS),
    # the report is plain data every command returns: it knows no producer and no view
    "bot.report": ("bot.engine", "bot.probes", "bot.kube", "bot.views", "bot.console", "bot.slack", "bot.actions",
                   "bot.remediation", "bot.proactive", "bot.service", "bot.sim", *ROOTS),
    # views shared by the terminal and Slack read a report; they never reach a cluster or a surface
    "bot.views": ("bot.console", "bot.slack", "bot.probes", "bot.actions", "bot.remediation", "bot.proactive",
                  "bot.service", "bot.sim", "kubernetes", "asyncssh", *ROOTS),
    # the CLI's presentation: the entry points use it, Slack and the diagnosis never do
    "bot.console": ("bot.slack", "bot.actions", "bot.remediation", "bot.proactive", "bot.service", "slack_sdk",
                    "slack_bolt", *ROOTS),
    # settings are read by every package, so they import none of the features
    "bot.settings": ("bot.engine", "bot.probes", "bot.actions", "bot.slack", "bot.remediation", "bot.proactive",
                     "bot.service", "bot.state", "bot.sim", "bot.console", "bot.views", *ROOTS),
    # line-marked YAML: a leaf every loader uses
    "bot.yamlio": ("bot.errors", "bot.settings", "bot.engine", "bot.kube", "bot.probes", "bot.sim", "bot.capture",
                   *ROOTS),
    # doctor reads and asks: it never reaches what changes a cluster, nor the Slack app
    "bot.doctor": ("bot.actions", "bot.remediation", "bot.service", "bot.slack.app", "slack_bolt", *ROOTS),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(BOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _import_statements(path: Path) -> tuple[tuple[int, str | None, tuple[str, ...]], ...]:
    """Every absolute import in the file, at any depth: (line, ``from`` module or None, names).
    One parse per module for the whole file's tests (each of the ~350 modules was parsed three
    times); only these small tuples are kept, not the trees."""
    found: list[tuple[int, str | None, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.append((node.lineno, None, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, tuple(alias.name for alias in node.names)))
    return tuple(found)


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for line, module, names in _import_statements(path):
        found += [(line, name) for name in names] if module is None else [(line, module)]
    return found


MODULES = sorted(BOT.rglob("*.py"))
NAMES = {_module_name(p): p for p in MODULES}


#: what may sit at the top of bot/: entry points and modules every package uses; the rest lives in
#: the package it serves (README, "How it is built")
TOP = {
    # entry points and composition roots
    "cli", "demo", "oneshot", "precompile", "server", "service", "wiring",
    # cross-cutting: errors, exit statuses, names, the command table, logs and metrics, ...
    "aio", "commands", "errors", "exit_codes", "identity", "log_stream", "names", "observability",
    "registry", "suggest", "version",
    # how the interpreter starts gpubot: the client imported by the piece, dataclass methods and
    # regular expressions kept compiled, results derived from gpubot's own files kept (kept.py),
    # the event loop serve runs on, the libraries' import warnings quieted (imported by precompile
    # before it records the patterns gpubot's imports compile: it imports nothing else); and how a
    # one-shot process ends: what its answer was built from dropped with the heap
    "dataclass_code", "event_loop", "exit_heap", "kept", "kube_import", "library_warnings", "regex_code",
}


def test_the_top_of_bot_holds_only_entry_points_and_cross_cutting_modules() -> None:
    top = {p.stem for p in BOT.glob("*.py")} - {"__init__"}
    assert top <= TOP, f"new top-level modules {sorted(top - TOP)}: put them in the package they serve"


def test_the_cited_design_section_exists() -> None:
    path, heading = DESIGN
    assert heading in path.read_text(encoding="utf-8").splitlines(), f"{path.name} lost {heading!r}"


def test_modules_found() -> None:
    assert len(MODULES) > 50
    for pkg in FORBIDDEN:
        assert pkg in NAMES, f"FORBIDDEN names {pkg}, which does not exist"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_no_import_crosses_a_forbidden_edge(path: Path) -> None:
    name = _module_name(path)
    rules = [bad for pkg, bad in FORBIDDEN.items() if name == pkg or name.startswith(pkg + ".")]
    problems = [
        f"{path.relative_to(BOT.parent)}:{line}: imports {module}"
        for line, module in _imports(path)
        for bad in rules
        for prefix in bad
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert not problems, "\n".join(problems)


def test_ssh_write_commands_appear_only_in_actions_and_the_simulator() -> None:
    writes = ("systemctl restart", "systemctl stop", "systemctl start", "kubelet_internal_checkpoint.bak")
    offenders = []
    for path in MODULES:
        name = _module_name(path)
        if name.startswith(("bot.actions", "bot.sim")):
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{name}: {w!r}" for w in writes if w in text and not _only_in_text(text, w)]
    assert not offenders, offenders


def _only_in_text(source: str, needle: str) -> bool:
    """True when the needle occurs only in docstrings/comments-like prose, not in a command string."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        # a sentence (help text, finding wording) mentions the command; a command string starts with it
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip().startswith(needle):
            return False
    return True


def _bot_imports(path: Path) -> set[str]:
    """The bot modules ``path`` imports, at any depth in the file (lazy imports count too)."""
    found = set()
    for _, module, names in _import_statements(path):
        if module is None:
            found |= {name for name in names if name in NAMES}
            continue
        for name in names:
            sub = f"{module}.{name}"
            if sub in NAMES:
                found.add(sub)
            elif module in NAMES:
                found.add(module)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    """A package's ``__init__`` may import its own modules; a module importing its package back
    (``from bot.remediation import …`` inside ``bot/remediation/``) or two modules importing each
    other, even lazily inside a function, is a cycle."""
    graph = {name: _bot_imports(path) - {name} for name, path in NAMES.items()}
    assert not _cycles(graph)


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _package(module: str) -> str:
    """The unit of the package graph: ``bot.engine.checks.x`` -> ``bot.engine``; a top-level module
    (``bot.settings``) is its own unit."""
    return ".".join(module.split(".")[:2])


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """Package -> packages it imports (lazy imports count), and one module edge per package edge."""
    graph: dict[str, set[str]] = {}
    witnesses: dict[tuple[str, str], list[str]] = {}
    for name, path in NAMES.items():
        source = _package(name)
        graph.setdefault(source, set())
        for imported in _bot_imports(path):
            target = _package(imported)
            if target not in (source, "bot"):
                graph[source].add(target)
                witnesses.setdefault((source, target), []).append(f"{name} imports {imported}")
    return graph, witnesses


def test_no_package_import_cycles() -> None:
    """Packages form layers: ``bot.settings`` may not import ``bot.proactive`` (even lazily, in a
    function) while the watch reads the settings. Each cycle is reported with one module import
    per package edge, so the line to move is named."""
    graph, witnesses = package_graph()
    problems = []
    for cycle in _cycles(graph):
        edges = [
            f"  {a} -> {b}: {witnesses[(a, b)][0]}" for a in cycle for b in cycle if (a, b) in witnesses
        ]
        problems.append(" <-> ".join(cycle) + "\n" + "\n".join(edges))
    assert not problems, "\n".join(problems)
