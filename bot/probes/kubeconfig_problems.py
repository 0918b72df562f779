"""Why a kubeconfig could not be loaded, in words a person can act on.

The official client says ``Invalid kube-config file. No configuration found.`` for a missing file,
raises a bare YAML ``ParserError`` for a broken one and names an unknown context only as a list
path. This module looks at the same files (read-only, never printing what is in them: a
kubeconfig holds tokens) and says which path was tried, which line is broken, which contexts
exist and the closest one to what was asked, then the next command to try.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from bot.settings import ClusterConfig
from bot.suggest import did_you_mean

#: where the official client looks when no file is named
DEFAULT_KUBECONFIG = "~/.kube/config"
#: a scenario every install ships, to try gpubot without a cluster
EXAMPLE_SCENARIO = "scenarios/zombie-checkpoint.yaml"


def tried_paths(cluster: ClusterConfig, env: Mapping[str, str] | None = None) -> list[str]:
    """The kubeconfig files the client reads for ``cluster``, in order (as typed, ``~`` kept)."""
    env = os.environ if env is None else env
    if cluster.kubeconfig:
        return [cluster.kubeconfig]
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return listed or [DEFAULT_KUBECONFIG]


def next_steps(has_command: Callable[[str], bool] | None = None) -> str:
    """What to try instead, as commands."""
    steps = ["--kubeconfig PATH", "--context NAME", f"--scenario {EXAMPLE_SCENARIO} (a simulated cluster)"]
    if has_command is not None and has_command("doctor"):
        steps.append("gpubot doctor (checks the setup)")
    return "try " + ", ".join(steps[:-1]) + " or " + steps[-1]


def _load(path: str) -> tuple[Any, str]:
    """(the parsed file, a problem); the problem names the file and, for bad YAML, the line."""
    file = Path(path).expanduser()
    if not file.is_file():
        return None, f"{path}: no such file"
    try:
        with file.open(encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return None, f"{path}{where}: not valid YAML ({exc.problem or exc.context or 'parse error'})"
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, f"{path}: cannot be read ({type(exc).__name__})"
    if not isinstance(data, dict):
        return None, f"{path}: not a kubeconfig (expected a mapping with clusters, contexts and users)"
    return data, ""


def _contexts(data: Mapping[str, Any]) -> list[str]:
    return [str(c.get("name")) for c in data.get("contexts") or [] if isinstance(c, dict) and c.get("name")]


def explain(cluster: ClusterConfig, *, has_command: Callable[[str], bool] | None = None,
            env: Mapping[str, str] | None = None) -> str:
    """One line: what is wrong with the kubeconfig of ``cluster`` and what to try next; empty when
    the files look right (then the client's own error stands)."""
    paths = tried_paths(cluster, env)
    loaded = [(_load(p), p) for p in paths]
    found = [(data, p) for (data, problem), p in loaded if data is not None]
    problems = [problem for (_, problem), _ in loaded if problem]
    broken = [p for p in problems if not p.endswith("no such file")]
    if broken:
        return f"kubeconfig {broken[0]}; fix the file or {next_steps(has_command)}"
    if not found:
        where = " and ".join(paths)
        source = "" if cluster.kubeconfig else (" ($KUBECONFIG)" if len(paths) > 1 or paths != [DEFAULT_KUBECONFIG]
                                                 else "")
        return f"no kubeconfig: tried {where}{source} (no such file); {next_steps(has_command)}"
    contexts = [name for data, _ in found for name in _contexts(data)]
    files = ", ".join(p for _, p in found)
    if cluster.context and cluster.context not in contexts:
        hint = did_you_mean(cluster.context, contexts)
        listed = ", ".join(contexts[:20]) or "none"
        return f"context {cluster.context!r} is not in {files}{hint} (contexts: {listed})"
    current = next((str(d["current-context"]) for d, _ in found if d.get("current-context")), "")
    if not cluster.context and not current:
        listed = ", ".join(contexts[:20]) or "none"
        return f"{files} sets no current-context: pick one with --context NAME (contexts: {listed})"
    return ""
