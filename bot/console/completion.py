"""Shell completion for bash, zsh and fish, generated from the command table.

``gpubot completion bash|zsh|fish`` prints a small script that asks ``gpubot __complete WORDS…``
for the candidates, as kubectl's (cobra's) completion does: the grammar lives in one place
(``bot.commands``) and a new command or option completes without touching any script. Values
come from where they are cheap to know: option values from the table (``-o``, ``--node-access``),
runbook names from the packaged runbooks, and pod, node and namespace names from the
``--scenario`` file typed on the line, or else from the cluster with a short timeout (nothing is
offered when it does not answer in time; completion never blocks the shell for long).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from bot.commands import COMMANDS, GLOBAL_OPTIONS, Command, Option, commands_for

#: what ``__complete`` prints when the shell should complete a file name instead
FILES = "__files__"
#: the longest a cluster lookup may take while the user waits on TAB
CLUSTER_TIMEOUT_S = 1.5
#: options whose value is a file path
_FILE_OPTIONS = frozenset({"--scenario", "--kubeconfig", "--config", "--png", "--write"})
#: options whose value is a name the cluster knows
_NAMESPACE_OPTIONS = frozenset({"-n", "--namespace", "--copy-from"})
SHELLS = ("bash", "zsh", "fish")


def _words(cmd: Command | None) -> list[Option]:
    return list(GLOBAL_OPTIONS) + (list(cmd.options_for("cli")) if cmd else [])


def _command_of(words: Sequence[str]) -> tuple[Command | None, int]:
    """The table command the words name (``runbooks validate`` is two), and how many words it took."""
    plain = [w for w in words if not w.startswith("-")]
    for cmd in commands_for("cli"):
        parts = cmd.name.split()
        if plain[: len(parts)] == parts:
            return cmd, len(parts)
    return None, 0


def _value_of(words: Sequence[str], flags: Iterable[str]) -> str:
    """The last value given to one of ``flags`` in ``words`` (``-n ai`` or ``--namespace=ai``)."""
    found = ""
    wanted = set(flags)
    for i, word in enumerate(words):
        head, eq, tail = word.partition("=")
        if eq and head in wanted:
            found = tail
        elif word in wanted and i + 1 < len(words):
            found = words[i + 1]
    return found


def candidates(words: Sequence[str]) -> list[str]:
    """What may come next: ``words`` are the words typed after ``gpubot``, the last one the word
    being completed (empty right after a space)."""
    *before, current = list(words) or [""]
    cmd, used = _command_of(before)
    options = _words(cmd)
    previous = before[-1] if before else ""
    by_flag = {f: o for o in options for f in o.flags}
    if previous in by_flag and by_flag[previous].metavar:
        return _option_values(by_flag[previous], previous, before)
    if current.startswith("-"):
        return [f for o in options for f in o.flags if f.startswith(current)]
    if cmd is None:
        return _next_command_word(before, current)
    positional = [w for i, w in enumerate(before) if not w.startswith("-") and not _is_value(before, i, by_flag)]
    if len(positional) > used or not cmd.args:
        return [n for n in _argument_values(cmd, before) if n.startswith(current)] if _repeats(cmd) else []
    return [n for n in _argument_values(cmd, before) if n.startswith(current)]


def _is_value(words: Sequence[str], i: int, by_flag: dict[str, Option]) -> bool:
    return i > 0 and words[i - 1] in by_flag and bool(by_flag[words[i - 1]].metavar)


def _repeats(cmd: Command) -> bool:
    return any(a.count == "any" for a in cmd.args)


def _next_command_word(before: Sequence[str], current: str) -> list[str]:
    plain = [w for w in before if not w.startswith("-")]
    names = [c.name for c in commands_for("cli")]
    if plain:  # inside a group: ``runbooks <TAB>``
        group = plain[0] + " "
        return [n[len(group):] for n in names if n.startswith(group) and n[len(group):].startswith(current)]
    return sorted({n.split()[0] for n in names if n.startswith(current)})


def _option_values(opt: Option, flag: str, before: Sequence[str]) -> list[str]:
    if flag in _FILE_OPTIONS:
        return [FILES]
    if "|" in opt.metavar:
        return opt.metavar.split("|")
    if flag in _NAMESPACE_OPTIONS:
        return names("namespaces", before)
    if flag in ("--node",):
        return names("nodes", before)
    return []


def _argument_values(cmd: Command, before: Sequence[str]) -> list[str]:
    if cmd.name == "runbook":
        from bot.engine.runbook_dir import load_with_overrides

        return sorted(load_with_overrides(None).guides)
    if cmd.name == "node-status":
        return names("nodes", before)
    if cmd.name in ("why-pending", "nvml", "verify"):
        return names("pods", before)
    if cmd.name in ("sim",):
        return [FILES]
    return []


def names(kind: str, words: Sequence[str]) -> list[str]:
    """Pod (of the ``-n`` namespace), node or namespace names: from the ``--scenario`` file on the
    line, else from the cluster within ``CLUSTER_TIMEOUT_S``; [] when neither answers."""
    namespace = _value_of(words, ("-n", "--namespace")) or "default"
    scenario = _value_of(words, ("--scenario",))
    try:
        if scenario:
            return _from_scenario(Path(scenario), kind, namespace)
        return _from_cluster(kind, namespace, words)
    except Exception:  # noqa: BLE001 - completion offers nothing rather than an error in the prompt
        return []


def _from_scenario(path: Path, kind: str, namespace: str) -> list[str]:
    from bot.sim.scenario import load_scenario

    objects = load_scenario(path).objects
    wanted = {"pods": "Pod", "nodes": "Node", "namespaces": "Namespace"}[kind]
    meta = [o.get("metadata") or {} for o in objects if o.get("kind") == wanted]
    if kind == "pods":
        meta = [m for m in meta if m.get("namespace", "default") == namespace]
    return sorted({str(m.get("name")) for m in meta if m.get("name")})


def _from_cluster(kind: str, namespace: str, words: Sequence[str]) -> list[str]:
    from dataclasses import replace

    from kubernetes import client

    from bot.probes.kube_client import new_api_client
    from bot.settings import load_settings

    settings = load_settings(config_file=_value_of(words, ("--config",)) or None)
    cluster = settings.cluster(None)
    kubeconfig = _value_of(words, ("--kubeconfig",))
    context = _value_of(words, ("--context", "--cluster"))
    if kubeconfig or context:
        cluster = replace(cluster, kubeconfig=kubeconfig or cluster.kubeconfig, context=context or cluster.context,
                          in_cluster=False)
    api = new_api_client(cluster)
    try:
        core = client.CoreV1Api(api)
        opts = {"_request_timeout": CLUSTER_TIMEOUT_S, "limit": 500}
        if kind == "pods":
            items = core.list_namespaced_pod(namespace, **opts).items
        elif kind == "nodes":
            items = core.list_node(**opts).items
        else:
            items = core.list_namespace(**opts).items
        return sorted(i.metadata.name for i in items)
    finally:
        api.close()


def complete_main(words: Sequence[str]) -> int:
    """``gpubot __complete WORDS…``: the candidates, one a line (hidden; the scripts call it)."""
    for line in candidates(words):
        print(line)
    return 0


# -- the scripts -------------------------------------------------------------------------------

_BASH = r'''# gpubot completion for bash: source <(gpubot completion bash)
_gpubot() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local out
    out=$(gpubot __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
    if [[ "$out" == "__FILES__" ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$out" -- "$cur"))
    fi
}
complete -o default -F _gpubot gpubot
'''

_ZSH = r'''#compdef gpubot
# gpubot completion for zsh: source <(gpubot completion zsh)
_gpubot() {
    local -a words_before out
    words_before=("${(@)words[2,CURRENT]}")
    out=("${(@f)$(gpubot __complete "${words_before[@]}" 2>/dev/null)}")
    if [[ "${out[1]}" == "__FILES__" ]]; then
        _files
    else
        compadd -- "${out[@]}"
    fi
}
compdef _gpubot gpubot
'''

_FISH_HEAD = r'''# gpubot completion for fish: gpubot completion fish | source
function __gpubot_complete
    set -l words (commandline -opc)[2..-1] (commandline -ct)
    set -l out (gpubot __complete $words 2>/dev/null)
    if test "$out" = "__FILES__"
        __fish_complete_path (commandline -ct)
    else
        printf '%s\n' $out
    end
end
complete -c gpubot -f -n 'not __fish_use_subcommand' -a '(__gpubot_complete)'
'''


def script(shell: str) -> str:
    """The completion script for ``shell``; fish also gets each command's summary as its
    description, from the table."""
    if shell == "bash":
        return _BASH.replace("__FILES__", FILES)
    if shell == "zsh":
        return _ZSH.replace("__FILES__", FILES)
    lines = [_FISH_HEAD.replace("__FILES__", FILES)]
    for cmd in COMMANDS:
        if "cli" in cmd.surfaces and " " not in cmd.name:
            summary = cmd.summary.replace("'", "\\'")[:80]
            lines.append(f"complete -c gpubot -n '__fish_use_subcommand' -a {cmd.name} -d '{summary}'")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - manual use
    raise SystemExit(complete_main(sys.argv[1:]))
