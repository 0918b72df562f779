"""The diagnostic commands and their arguments, shared by the CLI and the Slack ``/gpu`` command.

Parsing validates every name (``bot.names``) before anything runs, so a bad name costs no API
call and no SSH command. Errors are ``UsageError`` carrying a one-line message and the usage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.errors import InvalidNameError, UsageError
from bot.names import parse_target, shown, validate_name, validate_namespace

#: the longest raw input we look at; beyond this it is rejected before parsing
MAX_INPUT = 2000

USAGE: dict[str, str] = {
    "why-pending": "why-pending (POD | KIND/NAME) [-n NAMESPACE] [--cluster NAME]",
    "node-status": "node-status [NODE ...] [--cluster NAME]",
    "nvml": "nvml POD [-n NAMESPACE] [--cluster NAME]",
    "verify": "verify POD [-n NAMESPACE] [--cluster NAME]",
    "runbook": "runbook [NAME]",
    "help": "help",
}


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

    def target(self) -> dict[str, str | list[str]]:
        """The target as reported in JSON and headers."""
        if self.command == "node-status":
            return {"nodes": list(self.nodes)}
        if self.command in ("runbook", "help"):
            return {"topic": self.topic} if self.topic else {}
        return {"kind": self.kind, "name": self.name, "namespace": self.namespace}


def usage_error(command: str, problem: str) -> UsageError:
    usage = USAGE.get(command)
    return UsageError(f"{problem}. usage: {usage}" if usage else problem)


def parse_invocation(argv: list[str]) -> Invocation:
    """Parse ``[COMMAND, ARGS...]`` (already split) into a validated Invocation."""
    if sum(len(a) for a in argv) > MAX_INPUT:
        raise UsageError(f"input too long (over {MAX_INPUT} characters)")
    if not argv:
        raise UsageError("no command given. commands: " + ", ".join(USAGE))
    command, rest = argv[0], argv[1:]
    if command not in USAGE:
        raise UsageError(f"unknown command {shown(command, limit=30)}. commands: " + ", ".join(USAGE))
    positionals: list[str] = []
    namespace = ""
    cluster = ""
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("-n", "--namespace", "--cluster", "--context"):
            if i + 1 >= len(rest):
                raise usage_error(command, f"{arg} needs a value")
            value = rest[i + 1]
            if arg in ("-n", "--namespace"):
                namespace = value
            else:
                cluster = value
            i += 2
            continue
        if arg.startswith("--namespace="):
            namespace = arg.split("=", 1)[1]
        elif arg.startswith(("--cluster=", "--context=")):
            cluster = arg.split("=", 1)[1]
        elif arg.startswith("-") and arg != "-":
            raise usage_error(command, f"unknown option {shown(arg, limit=30)}")
        else:
            positionals.append(arg)
        i += 1
    try:
        if cluster:
            validate_name(cluster, what="cluster name")
        if command in ("why-pending", "nvml", "verify"):
            if len(positionals) != 1:
                raise usage_error(
                    command, "give exactly one pod" + (" or KIND/NAME" if command == "why-pending" else "")
                )
            kind, name = parse_target(positionals[0])
            if command != "why-pending" and kind != "Pod":
                raise usage_error(command, f"{command} takes a pod name")
            ns = validate_namespace(namespace) if namespace else "default"
            return Invocation(command=command, kind=kind, name=name, namespace=ns, cluster=cluster)
        if namespace:
            raise usage_error(command, "-n is not an option of this command")
        if command == "node-status":
            nodes = tuple(validate_name(n, what="node name") for n in positionals)
            return Invocation(command=command, nodes=nodes, cluster=cluster)
        if command == "runbook":
            if len(positionals) > 1:
                raise usage_error(command, "give at most one runbook name")
            topic = validate_name(positionals[0], what="runbook name") if positionals else ""
            return Invocation(command=command, topic=topic)
        if positionals:
            raise usage_error(command, "takes no arguments")
        return Invocation(command=command)
    except InvalidNameError as exc:
        raise UsageError(f"{exc.user_message}. usage: {USAGE[command]}") from None
