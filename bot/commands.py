"""The command table: every ``gpubot`` and ``/gpu`` command, its arguments and where it is offered.

``COMMANDS`` is the one place the grammar is written down. From it come the argparse parsers of
the CLI (``bot.cli``), the Slack text parser (``parse_invocation``), the usage lines of errors,
``/gpu help`` and ``gpubot --help``. A new command or option is a line here, nowhere else.

Both parsers hand their raw values to ``build_invocation``, which validates every name
(``bot.names``) before anything runs, so a bad name costs no API call and no SSH command, and
both surfaces accept exactly the same arguments. Errors are ``UsageError`` carrying a one-line
message and the usage, written the way the asker types it (``gpubot …`` or ``/gpu …``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.errors import InvalidNameError, UsageError
from bot.identity import Identity
from bot.names import parse_target, shown, validate_name, validate_namespace
from bot.suggest import did_you_mean
from bot.version import version

#: the longest raw input we look at; beyond this it is rejected before parsing
MAX_INPUT = 2000

Surface = Literal["cli", "slack"]
CLI_ONLY: frozenset[Surface] = frozenset({"cli"})
SLACK_ONLY: frozenset[Surface] = frozenset({"slack"})
BOTH: frozenset[Surface] = frozenset({"cli", "slack"})

_PREFIX: dict[Surface, str] = {"cli": "gpubot", "slack": "/gpu"}

#: what gpubot is, first line of every help
TAGLINE = "why is my GPU workload not running, and what to do about it."


def command_prefix(surface: Surface) -> str:
    """How a command starts where it is typed: ``gpubot`` in a terminal, ``/gpu`` in Slack."""
    return _PREFIX[surface]


# -- validators: typed text in, the Invocation field's value out (or InvalidNameError) ---------


def _pod(text: str) -> tuple[str, str]:
    kind, name = parse_target(text)
    if kind != "Pod":
        raise InvalidNameError(f"{shown(text)} is a {kind.lower()}: this command takes a pod name")
    return kind, name


def _node(text: str) -> str:
    return validate_name(text, what="node name")


def _cluster(text: str) -> str:
    return validate_name(text, what="cluster name")


def _runbook(text: str) -> str:
    return validate_name(text, what="runbook name")


def _private(flag: str) -> bool:
    """``--private`` and ``--public`` share one field; the switch typed last wins."""
    return flag == "--private"


# -- the table's shape -----------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """A positional argument."""

    #: the Invocation field it fills (``target`` fills kind and name), or the argparse dest
    name: str
    metavar: str
    #: one: exactly one; optional: at most one; any: zero or more
    count: Literal["one", "optional", "any"] = "one"
    #: validates typed text into the field's value; None: the CLI handler reads the raw text
    check: Callable[[str], Any] | None = None
    #: what to ask for in "give exactly one …"
    what: str = ""
    help: str = ""

    def syntax(self) -> str:
        return {"one": self.metavar, "optional": f"[{self.metavar}]", "any": f"[{self.metavar} ...]"}[self.count]


@dataclass(frozen=True)
class Option:
    """An option; ``flags[0]`` is the one usage lines show, the others are aliases."""

    flags: tuple[str, ...]
    dest: str
    #: empty: a switch that takes no value
    metavar: str = ""
    help: str = ""
    surfaces: frozenset[Surface] = BOTH
    #: validates the value into the Invocation field ``dest``; None: not part of the Invocation
    #: (``--json``, ``--scenario``: how the CLI runs it, read by its handler)
    check: Callable[[str], Any] | None = None
    #: argparse conversion and default, for options no Invocation holds
    type: Callable[[str], Any] = str
    default: Any = ""
    #: may be given more than once (CLI-only options): the values are collected into a list
    repeat: bool = False

    def syntax(self) -> str:
        if self.repeat:
            return f"[{self.flags[0]} {self.metavar} ...]"
        return f"[{self.flags[0]} {self.metavar}]" if self.metavar else f"[{self.flags[0]}]"


@dataclass(frozen=True)
class Command:
    """One command. Every command Slack offers runs as an ``Invocation`` through ``Service.run``;
    a CLI-only command has its own handler in ``bot.cli``."""

    #: a second word makes a command group on the CLI (``runbooks validate``)
    name: str
    summary: str
    args: tuple[Arg, ...] = ()
    options: tuple[Option, ...] = ()
    #: a diagnosis runs a runbook against a cluster (and takes a cluster)
    diagnosis: bool = False
    surfaces: frozenset[Surface] = CLI_ONLY

    @property
    def invocation(self) -> bool:
        """Whether it is parsed into an ``Invocation`` (everything Slack can run is)."""
        return "slack" in self.surfaces

    def options_for(self, surface: Surface) -> tuple[Option, ...]:
        return tuple(o for o in self.options if surface in o.surfaces)


NAMESPACE = Option(("-n", "--namespace"), "namespace", "NAMESPACE", "namespace (default: default)",
                   check=validate_namespace)
CLUSTER = Option(("--cluster", "--context"), "cluster", "NAME",
                 "a configured cluster, or (CLI) a kubeconfig context", check=_cluster)
SCENARIO = Option(("--scenario",), "scenario", "FILE", "run against a fresh simulator of this scenario file",
                  surfaces=CLI_ONLY)
JSON = Option(("--json",), "json", help="print one JSON object (the same as -o json)", surfaces=CLI_ONLY,
              default=False)
#: output formats of a diagnosis; ``--json`` is ``-o json``
OUTPUT_FORMATS = ("text", "json", "yaml", "wide")
OUTPUT = Option(("-o", "--output"), "output", "text|json|yaml|wide",
                "output format: text (default), json (one object), yaml, wide (text never wrapped, all evidence)",
                surfaces=CLI_ONLY)
#: ``audit`` and ``demo`` print text or JSON only
OUTPUT_TEXT_JSON = Option(("-o", "--output"), "output", "text|json", "output format (default: text)",
                          surfaces=CLI_ONLY)
KUBECONFIG = Option(("--kubeconfig",), "kubeconfig", "PATH",
                    "kubeconfig file (default: the setting, then $KUBECONFIG, then ~/.kube/config)",
                    surfaces=CLI_ONLY)
ALL_NAMESPACES = Option(("-A", "--all-namespaces"), "all_namespaces",
                        help="as in kubectl: accepted where the command is not about one namespaced object",
                        surfaces=CLI_ONLY, default=False)
#: ``pending -A``: every namespace (both surfaces: it is part of the Invocation)
PENDING_ALL = Option(("-A", "--all-namespaces"), "all_namespaces", help="every namespace (default: -n's)",
                     check=lambda flag: True, default=False)
PRIVATE = Option(("--private",), "private", help="answer only to you", surfaces=SLACK_ONLY, check=_private)
PUBLIC = Option(("--public",), "private", help="answer in the channel where the default is private",
                surfaces=SLACK_ONLY, check=_private)
NODE_ACCESS = Option(("--node-access",), "node_access", "auto|agent|ssh",
                     "how node reads reach the nodes: exec into the gpubot-node agent, SSH, or auto (the agent "
                     "where its pods run, else SSH where a key is set; default: settings)",
                     surfaces=CLI_ONLY)
POD = Arg("target", "POD", check=_pod, what="pod", help="the pod")
_POD_OPTIONS = (NAMESPACE, CLUSTER, SCENARIO, JSON, NODE_ACCESS, PRIVATE, PUBLIC, KUBECONFIG, OUTPUT, ALL_NAMESPACES)

COMMANDS: tuple[Command, ...] = (
    Command("why-pending", "why a GPU pod or workload does not run: the cause, its evidence and the fix",
            args=(Arg("target", "(POD | KIND/NAME)", check=parse_target, what="pod or KIND/NAME",
                      help="POD or KIND/NAME (deployment/x, statefulset/x, job/x, jobset/x, rayjob/x, "
                           "raycluster/x, mpijob/x, vcjob/x)"),),
            options=_POD_OPTIONS,
            diagnosis=True, surfaces=BOTH),
    Command("node-status", "logical allocation beside the physical truth, per GPU node",
            args=(Arg("nodes", "NODE", count="any", check=_node, help="nodes (default: every GPU node)"),),
            options=(CLUSTER, SCENARIO, JSON, NODE_ACCESS, PRIVATE, PUBLIC,
                     Option(("--png",), "png", "FILE", "also draw the cards by node and state as a PNG in FILE",
                            surfaces=CLI_ONLY), KUBECONFIG, OUTPUT, ALL_NAMESPACES),
            diagnosis=True, surfaces=BOTH),
    Command("nvml", "NVML and device access inside a pod's GPU containers",
            args=(POD,), options=_POD_OPTIONS, diagnosis=True, surfaces=BOTH),
    Command("verify", "the container GPU verification chain (read-only)",
            args=(POD,), options=_POD_OPTIONS, diagnosis=True, surfaces=BOTH),
    Command("pending", "every GPU pod of the namespace (-A: the cluster) that does not run, grouped by root "
            "cause, the worst first, one line per workload with the fix in a few words",
            options=(NAMESPACE, PENDING_ALL, CLUSTER, SCENARIO, JSON, NODE_ACCESS, PRIVATE, PUBLIC, KUBECONFIG,
                     OUTPUT),
            diagnosis=True, surfaces=BOTH),
    Command("runbook", "list the guides, or print one",
            args=(Arg("topic", "NAME", count="optional", check=_runbook, what="runbook name"),), surfaces=BOTH),
    Command("help", "what gpubot can do", surfaces=BOTH),
    Command("runbooks validate", "validate the built-in runbooks with the override files of DIR on top, as the bot "
            "would load them (default DIR: the configured runbook_dir)",
            args=(Arg("dir", "DIR", count="optional"),)),
    Command("sim", "serve a scenario as a simulated cluster (Kubernetes API + SSH nodes)",
            args=(Arg("scenario", "SCENARIO", count="optional", help="scenario YAML file"),),
            options=(Option(("--generate",), "generate", "SPEC",
                            "nodes=N,gpu_nodes=G,pods=P,seed=S: a generated scenario"),
                     Option(("--write",), "write", "FILE", "with --generate: write the scenario YAML here and exit"))),
    Command("serve", "run the Slack bot (Socket Mode or HTTP mode, from settings)"),
    Command("demo", "run the built-in demo on the bundled scenarios", options=(JSON, OUTPUT_TEXT_JSON)),
    Command("act", "run one remediation after showing its plan (typed confirmation)",
            args=(Arg("action", "ACTION", help="e.g. kubelet.restart, checkpoint.clear, pod.delete, namespace.label"),),
            options=(Option(("--node",), "node", "NODE"), Option(("--pod",), "pod", "POD"),
                     Option(("-n", "--namespace"), "namespace", "NAMESPACE"),
                     Option(("--label",), "label", "LABEL"), Option(("--value",), "value", "VALUE"),
                     Option(("--copy-from",), "copy_from", "NAMESPACE"),
                     Option(("--dry-run",), "dry_run", help="check and print the exact steps; change nothing",
                            default=False),
                     Option(("--yes",), "yes", help="skip typing the target name (automation)", default=False),
                     SCENARIO)),
    Command("capture", "write a redacted scenario of a live cluster, to replay with gpubot sim FILE: Nodes, "
            "Namespaces, GPU pods, pods on GPU nodes, GPU-stack pods, their workloads, quotas and events, and each "
            "GPU node's readings (never Secrets or ConfigMaps)",
            options=(CLUSTER,
                     Option(("-n", "--namespace"), "namespaces", "NAMESPACE",
                            "also keep every pod and workload of this namespace (repeatable)", repeat=True),
                     Option(("--pod",), "pod", "POD", "the pod the report is about (its namespace: the first -n)"),
                     Option(("--nodes",), "nodes", "gpu|all", "Node objects to keep (default: all)", default="all"),
                     Option(("-o", "--output"), "output", "FILE",
                            "where to write (default: capture-CLUSTER-TIME.yaml; - for stdout)"),
                     Option(("--force",), "force", help="overwrite FILE if it exists", default=False),
                     Option(("--anonymize",), "anonymize", default=False,
                            help="rename nodes, namespaces, pods and workloads consistently (the GPU stack and "
                                 "system namespaces keep their names); the mapping is printed, not written"),
                     NODE_ACCESS, KUBECONFIG)),
    Command("doctor", "check this installation: API permissions, state CRDs, node agents, one node read, "
            "Slack tokens and scopes, the Alertmanager token; a fix for each failure (exit 4: broken, 3: not "
            "checkable)", options=(CLUSTER, SCENARIO, JSON, OUTPUT_TEXT_JSON, NODE_ACCESS, KUBECONFIG)),
    Command("completion", "print the shell completion script (bash: source <(gpubot completion bash); zsh: the "
            "same with zsh; fish: gpubot completion fish | source)",
            args=(Arg("shell", "bash|zsh|fish", help="the shell"),)),
    Command("audit", "print the audit trail",
            options=(Option(("--since",), "since", "WHEN", "30m, 2h, 7d or an ISO timestamp"), JSON, OUTPUT_TEXT_JSON,
                     Option(("--limit",), "limit", "N", "at most N entries", type=int, default=200))),
)

#: options before the command word (CLI only)
GLOBAL_OPTIONS: tuple[Option, ...] = (
    Option(("--config",), "config", "FILE", "settings YAML file (also GPUBOT_CONFIG)", surfaces=CLI_ONLY),
    Option(("-v", "--verbose"), "verbose", help="log to stderr", surfaces=CLI_ONLY, default=False),
)

_BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}


def commands_for(surface: Surface) -> tuple[Command, ...]:
    """The commands offered where ``surface`` is typed, in table order."""
    return tuple(c for c in COMMANDS if surface in c.surfaces)


def command(name: str) -> Command:
    """The table entry of ``name`` (KeyError for a name not in the table)."""
    return _BY_NAME[name]


def usage(cmd: str | Command, surface: Surface) -> str:
    """The one-line syntax of a command as typed on ``surface``."""
    spec = command(cmd) if isinstance(cmd, str) else cmd
    parts = [command_prefix(surface), spec.name]
    parts += [a.syntax() for a in spec.args]
    parts += [o.syntax() for o in spec.options_for(surface)]
    return " ".join(parts)


def help_lines(surface: Surface) -> list[str]:
    """The commands part of ``/gpu help`` and ``gpubot help``: a usage line and summary each."""
    lines = [f"gpubot: {TAGLINE} (version {version()})", ""]
    lines += [f"  {usage(c, surface)} — {c.summary}" for c in commands_for(surface)]
    return lines


# -- Invocation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    """One validated command: what to run and on what."""

    command: str
    #: (Kind, name) for why-pending/nvml/verify
    kind: str = ""
    name: str = ""
    namespace: str = "default"
    nodes: tuple[str, ...] = field(default_factory=tuple)
    cluster: str = ""
    #: runbook name for ``runbook NAME``
    topic: str = ""
    #: where it was typed: decides how commands are written back (``gpubot …`` or ``/gpu …``)
    surface: Surface = "cli"
    #: Slack: answer only to the asker (``--private``), in the channel (``--public``), or as the
    #: channel's default says (None)
    private: bool | None = None
    #: per-user authority: the Kubernetes identity the diagnosis reads as (None: the bot's own)
    identity: Identity | None = None
    #: ``pending -A``: every namespace instead of ``namespace``
    all_namespaces: bool = False

    def target(self) -> dict[str, str | bool | list[str]]:
        """The target as reported in JSON and headers."""
        if self.command == "node-status":
            return {"nodes": list(self.nodes)}
        if self.command == "pending":
            return {"namespace": "*" if self.all_namespaces else self.namespace}
        spec = _BY_NAME.get(self.command)
        if spec is not None and not spec.diagnosis:
            return {"topic": self.topic} if self.topic else {}
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace}


def usage_error(cmd: str | Command, problem: str, surface: Surface = "cli") -> UsageError:
    return UsageError(f"{problem}. usage: {usage(cmd, surface)}")


def build_invocation(cmd: Command, values: Mapping[str, Any], surface: Surface) -> Invocation:
    """Validate one command's raw values (from argparse or ``parse_invocation``) into an Invocation.

    ``values`` maps argument names and option dests to typed text: a string for one value,
    a sequence for an ``any`` argument, None (or absent) for what was not given.
    """
    fields: dict[str, Any] = {}
    try:
        for opt in cmd.options_for(surface):
            raw = values.get(opt.dest)
            if opt.check is not None and raw:  # an empty value counts as not given
                fields[opt.dest] = opt.check(raw)
        for arg in cmd.args:
            raw = values.get(arg.name)
            if arg.check is None or raw is None:
                continue
            if arg.count == "any":
                fields[arg.name] = tuple(arg.check(v) for v in raw)
            elif arg.name == "target":
                fields["kind"], fields["name"] = arg.check(raw)
            else:
                fields[arg.name] = arg.check(raw)
    except InvalidNameError as exc:
        raise usage_error(cmd, exc.user_message, surface) from None
    return Invocation(command=cmd.name, surface=surface, **fields)


def parse_invocation(argv: Sequence[str], *, surface: Surface = "cli") -> Invocation:
    """Parse ``[COMMAND, ARGS...]`` (already split) into a validated Invocation.

    The Slack text parser; the CLI's argparse parsers, built from the same table, accept the
    same arguments. Options may come anywhere, as ``-n X``, ``-nX``, ``--namespace X`` or
    ``--namespace=X``; the last one given wins.
    """
    if sum(len(a) for a in argv) > MAX_INPUT:
        raise UsageError(f"input too long (over {MAX_INPUT} characters)")
    offered = [c for c in commands_for(surface) if c.invocation]
    names = ", ".join(c.name for c in offered)
    if not argv:
        raise UsageError(f"no command given. commands: {names}")
    word, rest = argv[0], list(argv[1:])
    cmd = next((c for c in offered if c.name == word), None)
    if cmd is None:
        hint = did_you_mean(word, [c.name for c in offered])
        raise UsageError(f"unknown command {shown(word, limit=30)}{hint}" + ("" if hint else f". commands: {names}"))
    return build_invocation(cmd, _split(cmd, rest, surface), surface)


def _split(cmd: Command, rest: list[str], surface: Surface) -> dict[str, Any]:
    """Words after the command into {dest: value}: options by flag, positionals by position."""
    options = [o for o in cmd.options_for(surface) if o.check is not None]
    by_flag = {flag: o for o in options for flag in o.flags}
    values: dict[str, Any] = {}
    positionals: list[str] = []
    words = iter(rest)
    for word in words:
        if not word.startswith("-") or word == "-":
            positionals.append(word)
            continue
        opt, value = _match_option(word, by_flag)
        if opt is None:
            hint = did_you_mean(word.partition("=")[0], by_flag)
            raise usage_error(cmd, f"unknown option {shown(word, limit=30)}{hint}", surface)
        if not opt.metavar:  # a switch: its value is the flag itself
            if value is not None:
                raise usage_error(cmd, f"{opt.flags[0]} takes no value", surface)
            values[opt.dest] = word
            continue
        if value is None:
            value = next(words, None)
            # like argparse: a following option is not a value (``-n --bogus`` is a missing value)
            if value is None or (value.startswith("-") and value != "-"):
                raise usage_error(cmd, f"{word} needs a value", surface)
        values[opt.dest] = value
    values.update(_positionals(cmd, positionals, surface))
    return values


def _match_option(word: str, by_flag: Mapping[str, Option]) -> tuple[Option | None, str | None]:
    """(option, attached value or None) for one word that starts with '-', as argparse reads it."""
    if word in by_flag:
        return by_flag[word], None
    head, eq, tail = word.partition("=")
    if eq and head in by_flag:
        return by_flag[head], tail
    short = word[:2]
    if not word.startswith("--") and short in by_flag:
        return by_flag[short], word[2:]
    return None, None


def _positionals(cmd: Command, words: list[str], surface: Surface) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for arg in cmd.args:
        if arg.count == "any":
            values[arg.name], words = words, []
        elif words:
            values[arg.name], words = words[0], words[1:]
        elif arg.count == "one":
            raise usage_error(cmd, f"give exactly one {arg.what}", surface)
    if words:
        spec = cmd.args[-1] if cmd.args else None
        if spec is None:
            raise usage_error(cmd, "takes no arguments", surface)
        raise usage_error(cmd, f"give {'exactly' if spec.count == 'one' else 'at most'} one {spec.what}", surface)
    return values

