"""Render the Helm chart (deploy/helm/gpubot) with the real ``helm template``, and the Kustomize
targets, which render the same chart through Kustomize's ``helmCharts``, with ``kubectl kustomize``.

The switches are read from the chart's own schema: every ``….enabled`` value (what the chart
installs) and every choice of ``slack.mode`` and ``config.node_access``, so a switch added to the
chart is tested without editing this file. ``combinations()`` is every combination of them (2^9:
too many to render, lint and scan on every run), so ``variants()`` renders a sample that still
meets every switch in every pairing: a covering array (each value of any three switches together
in at least one rendered combination, ``covers()``), the named risky ones (``risky()``: defaults,
all on, each switch flipped alone, the refused pairs), and a few drawn by a hypothesis strategy
(the same ones on every CI run, profile ``ci``; new ones on each local run). The other booleans
outside ``config`` (``options()``, each changing one object) are flipped one at a time, alone and
with every switch on.

Helpers only; never writes into the repository.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import os
import pickle
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from tests.deploy import helm_tool

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "gpubot"
KUSTOMIZE = REPO / "deploy" / "kustomize"
RUNBOOKS = REPO / "runbooks"
RELEASE = "gpubot"
NAMESPACE = "gpubot"
#: a host for combinations that turn the Ingress on (the chart requires one then)
INGRESS_HOST = "gpubot.example.com"

Obj = dict[str, Any]


def schema() -> dict[str, Any]:
    return dict(json.loads((CHART / "values.schema.json").read_text(encoding="utf-8")))


def _booleans(node: dict[str, Any], path: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = []
    for key, sub in node.get("properties", {}).items():
        here = (*path, key)
        if here == ("config",):
            continue  # gpubot's own settings, not what the chart installs
        if sub.get("type") == "boolean":
            out.append(here)
        out.extend(_booleans(sub, here))
    return out


def switches() -> dict[str, list[Any]]:
    """Dotted value path -> the values it takes in the combinations."""
    out: dict[str, list[Any]] = {".".join(p): [False, True] for p in _booleans(schema(), ()) if p[-1] == "enabled"}
    props = schema()["properties"]
    out["slack.mode"] = list(props["slack"]["properties"]["mode"]["enum"])
    # "agent" renders as "auto" does (the same mounts) except that it refuses nodeAgent.enabled:
    # false, which the wrong-values test covers: the combinations take auto and ssh
    out["config.node_access"] = [a for a in props["config"]["properties"]["node_access"]["enum"] if a != "agent"]
    return out


def options() -> list[str]:
    """The other booleans outside ``config``, as dotted paths."""
    return [".".join(p) for p in _booleans(schema(), ()) if p[-1] != "enabled"]


@functools.cache
def _defaults_text() -> str:
    return (CHART / "values.yaml").read_text(encoding="utf-8")


def chart_defaults() -> dict[str, Any]:
    """The chart's values.yaml (a fresh copy each call)."""
    return copy.deepcopy(_parsed_defaults())


@functools.cache
def _parsed_defaults() -> dict[str, Any]:
    return dict(yaml.safe_load(_defaults_text()))


def lookup(values: dict[str, Any], dotted: str) -> Any:
    node: Any = values
    for key in dotted.split("."):
        node = node[key]
    return node


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}``."""
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        *parents, last = dotted.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def merge(*layers: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of values, later layers win (as helm merges -f files)."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = value
    return out


def combinations() -> list[dict[str, Any]]:
    """Every combination of the switches, as flat ``{path: value}`` dicts."""
    names = sorted(switches())
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(switches()[n] for n in names))]


def flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (the inverse of ``nested``; lists stay values)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def presets() -> dict[str, dict[str, Any]]:
    """The platform presets shipped beside values.yaml (``values-eks.yaml`` -> ``eks``), as flat values."""
    return {
        p.stem.removeprefix("values-"): flat(yaml.safe_load(p.read_text(encoding="utf-8")))
        for p in sorted(CHART.glob("values-*.yaml"))
    }


#: how many switches every value-combination of is rendered together (3: any three switches, in
#: each of their 8 settings, meet in at least one rendered combination)
STRENGTH = 3
#: combinations drawn by the hypothesis strategy on top of the covering array and the risky ones
DRAWN = 8


def interactions(combo: dict[str, Any], strength: int = STRENGTH) -> set[tuple[tuple[str, Any], ...]]:
    """Every setting of ``strength`` switches together that ``combo`` renders."""
    return set(itertools.combinations(sorted(combo.items()), strength))


def covering_array(candidates: list[dict[str, Any]], strength: int = STRENGTH) -> list[dict[str, Any]]:
    """Few ``candidates`` that together have every ``strength``-way interaction any candidate has
    (greedy: take the one that adds most, first on ties; deterministic, about 2^strength * 2 rows)."""
    missing = set().union(*(interactions(c, strength) for c in candidates))
    out = []
    while missing:
        best = max(candidates, key=lambda c: len(interactions(c, strength) & missing))
        out.append(best)
        missing -= interactions(best, strength)
    return out


def risky() -> list[dict[str, Any]]:
    """The combinations named for a reason: the defaults, every switch on, every switch flipped
    alone from the defaults (what a user changes first), each turned off from all-on, and the
    combinations the chart refuses (Ingress in Socket Mode), alone and with everything on."""
    defaults = chart_defaults()
    base = {name: lookup(defaults, name) for name in switches()}
    all_on = {name: choices[-1] for name, choices in switches().items()}
    out = [base, all_on]
    for name, choices in switches().items():
        out.append({**base, name: next(c for c in choices if c != base[name])})
        out.append({**all_on, name: choices[0]})
    out += [{**base, "ingress.enabled": True}, {**all_on, "slack.mode": "socket"}]
    return out


def combination_strategy() -> Any:
    """A hypothesis strategy over the switches (every key, one of its choices each)."""
    from hypothesis import strategies as st

    return st.fixed_dictionaries({name: st.sampled_from(choices) for name, choices in sorted(switches().items())})


def drawn(count: int = DRAWN) -> list[dict[str, Any]]:
    """``count`` combinations drawn from ``combination_strategy()``, refused ones included; always
    derandomized: every call, every xdist worker and every run must draw the same sample, or the
    workers collect different tests and a test comparing two calls fails."""
    from hypothesis import HealthCheck, Phase, given, settings

    out: list[dict[str, Any]] = []

    @settings(max_examples=count, database=None, derandomize=True, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(combination_strategy())
    def collect(combo: dict[str, Any]) -> None:
        out.append(combo)

    collect()
    return out


def covers() -> list[dict[str, Any]]:
    """The covering array over the combinations the chart renders (every valid interaction)."""
    return copy.deepcopy(_covers())


@functools.cache
def _covers() -> list[dict[str, Any]]:
    return covering_array([c for c in combinations() if valid(c)])


def coverage_gaps(sample: list[dict[str, Any]]) -> set[tuple[tuple[str, Any], ...]]:
    """The interactions some valid combination renders and no valid full combination in
    ``sample`` does (empty: the sample meets every ``STRENGTH`` switches in every setting)."""
    names = set(switches())
    have = set().union(*(interactions(c) for c in sample if set(c) == names and valid(c)))
    return set().union(*(interactions(c) for c in combinations() if valid(c))) - have


def variants() -> list[dict[str, Any]]:
    """The sampled combinations of the switches (``covers()``, ``risky()``, ``drawn()``), then
    each option flipped alone and with every switch on, then each platform preset (alone: a preset
    is what a user installs with). The same list for the whole run (fresh copies each call)."""
    return copy.deepcopy(_variants())


@functools.cache
def _variants() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for combo in [*covers(), *risky(), *drawn()]:
        if combo not in out:
            out.append(combo)
    all_on = {name: choices[-1] for name, choices in switches().items()}
    for option in options():
        flipped = {option: not lookup(chart_defaults(), option)}
        out += [flipped, {**all_on, **flipped}]
    return out + list(presets().values())


def combination_values(combo: dict[str, Any]) -> dict[str, Any]:
    """Values for one combination (with an Ingress host where the Ingress is on)."""
    values = nested(combo)
    if combo.get("ingress.enabled"):
        values = merge(values, {"ingress": {"host": INGRESS_HOST}})
    return values


def combination_id(combo: dict[str, Any]) -> str:
    """The values that differ from the chart's defaults, or ``defaults``."""
    defaults = chart_defaults()
    return ",".join(f"{k}={v}" for k, v in sorted(combo.items()) if v != lookup(defaults, k)) or "defaults"


def refusals(combo: dict[str, Any]) -> list[str]:
    """What the chart says when it refuses ``combo``: an Ingress in Socket Mode (nothing would
    answer /slack/events), node reads through the agent without the agent. Empty: it renders."""
    out = []
    if combo.get("ingress.enabled") and combo.get("slack.mode") != "http":
        out.append("slack.mode: http")
    values = merge(chart_defaults(), nested(combo))
    if values["config"].get("node_access") == "agent" and not values["nodeAgent"]["enabled"]:
        out.append("config.node_access: agent needs nodeAgent.enabled")
    return out


def valid(combo: dict[str, Any]) -> bool:
    return not refusals(combo)


# ---------------------------------------------------------------------------------------------
# helm


def _key(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True)


#: where this run's helm answers are kept for the other workers (None: this process only)
_shared: Path | None = None


def share_renders(directory: Path) -> None:
    """Keep helm's answers in ``directory`` too, for every worker of this test run: test_chart,
    test_rbac and test_manifests render many of the same value sets (a third of ~380 helm calls
    were repeats), each in its own worker process."""
    global _shared
    directory.mkdir(parents=True, exist_ok=True)
    _shared = directory


@functools.cache
def _chart_digest() -> str:
    """The chart's files, hashed: a kept answer is for this chart only."""
    digest = hashlib.sha256()
    for path in sorted(p for p in CHART.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(CHART)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _helm_cached(command: str, key: str, extra: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    kept = None
    if _shared is not None:
        name = hashlib.sha256(json.dumps([_chart_digest(), command, key, extra]).encode()).hexdigest()
        kept = _shared / f"{name}.json"
        if kept.exists():
            answer = json.loads(kept.read_text(encoding="utf-8"))
            return subprocess.CompletedProcess(answer["args"], answer["rc"], answer["stdout"], answer["stderr"])
    with tempfile.TemporaryDirectory() as tmp:
        values_file = Path(tmp) / "values.yaml"
        values_file.write_text(yaml.safe_dump(json.loads(key)), encoding="utf-8")
        if command == "lint":
            args = ["lint", "--strict", str(CHART), "-f", str(values_file), "--namespace", NAMESPACE, *extra]
        else:
            args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(values_file), *extra]
        proc = helm_tool.run(args)
    if kept is not None:
        answer = {"args": proc.args, "rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
        part = kept.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps(answer), encoding="utf-8")
        part.replace(kept)  # whole or absent for a reader in another worker
    return proc


def helm_template(values: dict[str, Any] | None = None, *extra: str) -> subprocess.CompletedProcess[str]:
    """``helm template gpubot deploy/helm/gpubot -n gpubot -f VALUES EXTRA…`` (cached)."""
    return _helm_cached("template", _key(values or {}), tuple(extra))


def helm_lint(values: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    """``helm lint --strict deploy/helm/gpubot -f VALUES`` (cached)."""
    return _helm_cached("lint", _key(values or {}), ())


def render_text(values: dict[str, Any] | None = None, *extra: str) -> str:
    proc = helm_template(values, *extra)
    if proc.returncode != 0:
        raise AssertionError(f"helm template failed for values {values}:\n{proc.stderr}")
    return proc.stdout


#: libyaml's loader where PyYAML has it: hundreds of renders are parsed per run
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse(text: str) -> list[Obj]:
    """The documents of ``text``, as fresh objects the caller may change."""
    return pickle.loads(_parsed(text))  # noqa: S301 - what _parsed pickled, in this process


@functools.cache
def _parsed(text: str) -> bytes:
    """Parsed once per text, kept pickled: the same render is parsed by many tests (the defaults
    by most) and in several workers (test_chart and test_rbac parse every variant), and a copy
    from a pickle costs a fiftieth of parsing the YAML again (0.2 ms, 13 ms)."""
    kept = _shared / f"{hashlib.sha256(text.encode()).hexdigest()}.parsed" if _shared is not None else None
    if kept is not None and kept.exists():
        return kept.read_bytes()
    data = pickle.dumps([d for d in yaml.load_all(text, Loader=_LOADER) if d], protocol=5)
    if kept is not None:
        part = kept.with_suffix(f".{os.getpid()}.part")
        part.write_bytes(data)
        part.replace(kept)  # whole or absent for a reader in another worker
    return data


def render(values: dict[str, Any] | None = None, *extra: str) -> list[Obj]:
    """The objects the chart renders with ``values`` (fresh dicts: callers may not share mutations)."""
    return parse(render_text(values, *extra))


def prerender(all_values: list[dict[str, Any]], *, lint: bool = True) -> None:
    """Run helm template (and helm lint) for many value sets at once (fills the caches)."""
    helm_tool.helm()  # install once, before the threads race for the lock
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(helm_template, all_values))
        if lint:
            list(pool.map(helm_lint, all_values))


# ---------------------------------------------------------------------------------------------
# kustomize


def kubectl() -> str:
    path = shutil.which("kubectl")
    if not path:
        raise AssertionError("kubectl is not on PATH; the Kustomize tests render with `kubectl kustomize`")
    return path


def kustomize_targets() -> list[str]:
    """base and each overlay, relative to deploy/kustomize."""
    found = sorted(p.parent for p in KUSTOMIZE.rglob("kustomization.yaml"))
    return [str(p.relative_to(KUSTOMIZE)) for p in found]


def kustomize_text(path: Path) -> str:
    """What ``kubectl kustomize --enable-helm`` prints for the kustomization in ``path``."""
    proc = subprocess.run(
        [
            kubectl(),
            "kustomize",
            "--enable-helm",
            "--helm-command",
            helm_tool.helm(),
            "--load-restrictor",
            "LoadRestrictionsNone",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=helm_tool.helm_env(),
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path} failed:\n{proc.stderr}")
    return proc.stdout


def find(objs: list[Obj], kind: str, name: str = "") -> list[Obj]:
    """The objects of ``kind`` (called ``name``, when given)."""
    return [o for o in objs if o["kind"] == kind and name in ("", o["metadata"]["name"])]


def one(objs: list[Obj], kind: str, name: str = "") -> Obj:
    found = find(objs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name!r}, found {len(found)}"
    return found[0]
