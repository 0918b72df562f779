"""The ``gpubot`` command line: the same commands as Slack, printed as text or JSON.

Exit codes (``bot.exit_codes``, documented in the README): 0 a complete answer with nothing wrong,
4 a complete diagnosis reporting a critical or warning finding (POD_NOT_FOUND included), 3 an
incomplete one (reads it needed failed; it still prints what it had), 2 bad usage or a
configuration to fix (one line on stderr, never a traceback), 1 an unexpected internal error.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import gc
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from bot.commands import (
    GLOBAL_OPTIONS,
    TAGLINE,
    Arg,
    Command,
    Invocation,
    Option,
    build_invocation,
    commands_for,
    usage,
)
from bot.console.output import emit_report, output_format
from bot.console.progress import progress_for
from bot.console.scenario_files import resolve_scenario
from bot.errors import ConfigError, GpubotError, RunbookError, ScenarioError, UsageError
from bot.exit_codes import ExitCode, diagnosis_status
from bot.exit_heap import keep_until_exit
from bot.library_warnings import quiet_library_warnings
from bot.log_stream import CurrentStderrHandler
from bot.names import printable
from bot.settings import ClusterConfig, Settings, load_settings, with_node_access
from bot.suggest import did_you_mean
from bot.version import version

if TYPE_CHECKING:
    from bot.probes.clients import KubeClients

log = logging.getLogger("gpubot")

#: ``time.monotonic()`` when the command started: the process's start for the ``gpubot`` process
#: (``run``), the call for in-process callers (``main``); the command's deadline counts from it
_START: float | None = None
#: this is the ``gpubot`` process (``run``), which ends with ``os._exit``: a one-shot diagnosis
#: keeps what its answer was built from to that exit (``bot.exit_heap``); ``serve`` never does
_EXITS_AFTER_ANSWER = False


def _started() -> float:
    return _START if _START is not None else time.monotonic()


def process_start() -> float:
    """``time.monotonic()`` at which this process started (Linux: its start time in /proc), so
    interpreter start and imports count against the command's deadline; elsewhere, now."""
    try:
        stat = Path("/proc/self/stat").read_text(encoding="ascii")
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: start time, in clock ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - max(age, 0.0)


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exit 2, without the usage dump.

    A command's parser (``command`` set) reads options between positionals as the Slack parser
    does (``node-status n1 --cluster c n2``), takes no abbreviated flags, and ends its errors
    with the command's usage line from the table.
    """

    def __init__(self, *args: Any, command: Command | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.command = command
        self._intermixed = False

    def error(self, message: str) -> NoReturn:
        text = printable(_with_suggestion(message, self.command))  # argparse echoes words as typed
        if self.command is not None:
            stop = "" if text.endswith("?") else "."
            raise UsageError(f"{text}{stop} usage: {usage(self.command, 'cli')}")
        raise UsageError(text if self.prog == "gpubot" else f"{self.prog}: {text}")  # main adds "gpubot: "

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # parse_known_intermixed_args calls back into parse_known_args on Python < 3.12
        if self.command is None or self._intermixed:
            return super().parse_known_args(args, namespace)
        self._intermixed = True
        try:
            parsed, extras = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixed = False
        if extras:  # here, where the error can carry this command's usage
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<word>[^']*)' \(choose from (?P<choices>.*)\)")


def _with_suggestion(message: str, command: Command | None) -> str:
    """argparse's error with the close match of what was mistyped: a command word ("invalid
    choice") or an option of the command ("unrecognized arguments")."""
    bad = _INVALID_CHOICE.search(message)
    if bad:
        choices = [c.strip().strip("'") for c in bad["choices"].split(",")]
        return f"unknown command '{bad['word']}'{did_you_mean(bad['word'], choices)} (gpubot --help lists them)"
    if message.startswith("unrecognized arguments: "):
        options = command.options_for("cli") if command is not None else GLOBAL_OPTIONS
        flags = [f for o in options for f in o.flags] + ([] if command is not None else ["--help"])
        typed = [w.partition("=")[0] for w in message.split(": ", 1)[1].split() if w.startswith("-")]
        hints = [did_you_mean(w, flags) for w in typed]
        return message + next((h for h in hints if h), "")
    return message


def _add_option(p: argparse.ArgumentParser, opt: Option) -> None:
    if opt.repeat:
        p.add_argument(*opt.flags, dest=opt.dest, metavar=opt.metavar, action="append", help=opt.help or None)
    elif opt.metavar:
        p.add_argument(*opt.flags, dest=opt.dest, metavar=opt.metavar, type=opt.type, default=opt.default,
                       help=opt.help or None)
    else:
        p.add_argument(*opt.flags, dest=opt.dest, action="store_true", help=opt.help or None)


def _add_arg(p: argparse.ArgumentParser, arg: Arg) -> None:
    if arg.count == "one":
        p.add_argument(arg.name, metavar=arg.metavar, help=arg.help or None)
    else:
        default: list[str] | None = None if arg.count == "optional" else []
        nargs = "?" if arg.count == "optional" else "*"
        p.add_argument(arg.name, metavar=arg.metavar, nargs=nargs, default=default, help=arg.help or None)


def _add_command(sub: Any, word: str, cmd: Command) -> None:
    p = sub.add_parser(word, help=cmd.summary, description=cmd.summary, usage=usage(cmd, "cli"), command=cmd)
    for arg in cmd.args:
        _add_arg(p, arg)
    for opt in cmd.options_for("cli"):
        _add_option(p, opt)
    p.set_defaults(spec=cmd)


class _VersionAction(argparse.Action):
    """``--version``: reads the package metadata only when asked (every other command skips it)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:  # noqa: A002
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(f"gpubot {version()}")
        parser.exit()


#: the parsers of each thread (``build_parser``), by the command word they were narrowed to ("": all)
_BUILT = threading.local()


def build_parser(words: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The CLI's parsers, one per command of the table (``bot.commands.COMMANDS``).

    Where the command line ``words`` begins with a command word, only that command's parser is
    built: argparse asks gettext for every help string of every command, ~4 ms of every cold
    command for parsers it does not use. Anything else (``--help``, a global option first, an
    unknown or mistyped word) gets every command's parser, so help lists them all and a typo gets
    its suggestion. Built once per thread and word: parsing leaves a parser as it found it but
    changes it while it runs (intermixed parsing), so threads do not share one."""
    word = words[0] if words else ""
    key = word if word in _command_words() else ""
    built: dict[str, argparse.ArgumentParser] | None = getattr(_BUILT, "parsers", None)
    if built is None:
        built = _BUILT.parsers = {}
    if key not in built:
        built[key] = _new_parser(key)
    return built[key]


def _command_words() -> set[str]:
    """The first words of the CLI's commands (``node-status``, ``cache`` of ``cache clear``)."""
    return {c.name.partition(" ")[0] for c in commands_for("cli")}


def _new_parser(only: str = "") -> argparse.ArgumentParser:
    """Every command's parser, or (``only``) the parsers of the commands whose first word it is."""
    parser = _Parser(
        prog="gpubot",
        description=f"gpubot: {TAGLINE}",
        epilog="gpubot COMMAND --help shows a command's options. In Slack the same diagnoses are /gpu COMMAND.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print gpubot's version and exit")
    for opt in GLOBAL_OPTIONS:
        _add_option(parser, opt)
    parser.set_defaults(spec=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    groups: dict[str, Any] = {}
    cli_commands = commands_for("cli")
    for cmd in cli_commands:
        word, _, rest = cmd.name.partition(" ")
        if only and word != only:
            continue
        if not rest:
            _add_command(sub, word, cmd)
            continue
        if word not in groups:
            members = [c for c in cli_commands if c.name.startswith(word + " ")]
            summary = "; ".join(f"{c.name.split(' ', 1)[1]}: {c.summary}" for c in members)
            group = sub.add_parser(word, help=summary, description=summary)
            groups[word] = group.add_subparsers(dest="subcommand", metavar="|".join(
                c.name.split(" ", 1)[1] for c in members), parser_class=_Parser)
        _add_command(groups[word], rest, cmd)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(config_file=args.config or None)


def _with_context(settings: Settings, context: str) -> Settings:
    """--context picks a configured cluster by name, or a kubeconfig context of the default cluster."""
    if not context or any(c.name == context for c in settings.clusters):
        return settings
    base = settings.clusters[0]
    cluster = ClusterConfig(
        name=context,
        kubeconfig=base.kubeconfig,
        context=context,
        ssh_known_hosts=base.ssh_known_hosts,
        ssh_key_path=base.ssh_key_path,
    )
    return replace(settings, clusters=(cluster, *settings.clusters))


def invocation_from_args(args: argparse.Namespace) -> Invocation:
    """The validated Invocation of a parsed diagnosis, runbook or help command line."""
    return build_invocation(args.spec, vars(args), "cli")


def _with_kubeconfig(settings: Settings, path: str) -> Settings:
    """--kubeconfig PATH replaces the default cluster's kubeconfig (as kubectl's flag does)."""
    if not path:
        return settings
    if not Path(path).expanduser().is_file():
        raise ConfigError(f"--kubeconfig {printable(path)}: no such file")
    first = replace(settings.clusters[0], kubeconfig=str(Path(path).expanduser()), in_cluster=False)
    return replace(settings, clusters=(first, *settings.clusters[1:]))


def _one_object(spec: Command, args: argparse.Namespace) -> None:
    """-A on a command about one pod: kubectl's habit, answered with what to type instead."""
    if not getattr(args, "all_namespaces", False) or not any(a.name == "target" for a in spec.args):
        return  # node-status and other cluster-wide commands: nodes have no namespace, -A changes nothing
    raise UsageError(
        f"-A: {spec.name} diagnoses one pod or workload, so it needs its namespace: -n NAMESPACE "
        "(kubectl get pods -A --field-selector metadata.name=NAME finds it)"
    )


def _node_access_and_scenario(args: argparse.Namespace, settings: Settings) -> Settings:
    """``--node-access`` applied to the settings, and ``--scenario`` resolved: the file as given,
    else the bundled scenario of that name (``bot.console.scenario_files``)."""
    if args.scenario:
        args.scenario = resolve_scenario(args.scenario)
    return with_node_access(settings, args.node_access)


#: the diagnoses whose runbook reads every node (tests/probes/test_node_prefetch.py keeps this true)
READS_EVERY_NODE = frozenset({"why-pending", "node-status", "verify"})


def _reading_every_node(settings: Settings, cluster: str, deadline: float) -> KubeClients:
    """The configured cluster's clients, built in a daemon thread that then asks for every node
    (``KubeReader.start_node_prefetch``), while this thread goes on to import the engine.

    The engine's start-up (its modules and checks, ~40 ms) does not need the cluster, and the
    node list is the longest read of a cold diagnosis: this way they overlap (cold why-pending
    at 5,000 nodes, 20 alternating turns: median 482 -> 472 ms). A client that cannot be built
    here is built again, and its error reported, by the command itself (``Service.sources``),
    which waits for this build where it is still going (a kubeconfig credential plugin), within
    the deadline.
    """
    from bot.probes.clients import KubeClients
    from bot.probes.deadline import until

    clients = KubeClients(settings, prefetch_nodes=True)

    def build() -> None:
        with until(deadline), contextlib.suppress(Exception):
            clients.for_cluster(cluster)

    threading.Thread(target=build, name="client-build", daemon=True).start()
    return clients


def _cmd_diagnose(args: argparse.Namespace) -> int:
    inv = invocation_from_args(args)
    _one_object(args.spec, args)
    fmt = output_format(args, args.spec)
    settings = _with_kubeconfig(_settings(args), getattr(args, "kubeconfig", "") or "")
    settings = _with_context(settings, "" if args.scenario else inv.cluster)
    settings = _node_access_and_scenario(args, settings)
    # A one-shot diagnosis allocates millions of objects (the client's modules, parsed API pages)
    # and frees nearly all of them by reference counting: the cyclic collector's scans over that
    # churn (about 50 collections, 0.10-0.12 s of a cold why-pending at 100,000 pods, measured with
    # gc.callbacks) find nothing worth it. It stays off until the process exits (``run``);
    # ``main`` gives it back to in-process callers.
    gc.disable()
    if _EXITS_AFTER_ANSWER:
        keep_until_exit()  # freed with the heap at os._exit, not object by object before the answer
    deadline = _started() + settings.command_deadline_s  # from process start, client setup included
    clients = None
    if not args.scenario and inv.identity is None and inv.command in READS_EVERY_NODE:
        clients = _reading_every_node(settings, inv.cluster, deadline)
    from bot.oneshot import run_invocation

    with progress_for(fmt) as progress:  # on a terminal: what is being read, erased before the answer
        report = asyncio.run(
            run_invocation(
                inv, settings, scenario=args.scenario, deadline=deadline, progress=progress, clients=clients,
                started=_started(),
            )
        )
    emit_report(report, fmt)
    png = getattr(args, "png", "")
    if png:
        from bot.views.node_picture import render_node_picture

        try:
            Path(png).write_bytes(render_node_picture(report))
        except OSError as exc:
            raise UsageError(f"cannot write {printable(png)}: {exc.strerror}") from None
        print(f"picture: {printable(png)}", file=sys.stderr)
    if not report.complete:  # an incomplete answer outranks what it found
        return ExitCode.INCOMPLETE
    if report.pending is not None:  # pending: GPU work waits (4) or nothing does (0)
        return ExitCode.FINDINGS if report.pending.stuck_pods else ExitCode.OK
    return diagnosis_status(f.severity for f in report.findings)


def _cmd_runbook(args: argparse.Namespace) -> int:
    # runbooks only: no Service, so neither the Kubernetes client nor asyncssh is imported
    from bot.engine.help_text import runbook_report
    from bot.engine.runbook_dir import load_with_overrides

    print(runbook_report(load_with_overrides(_settings(args).runbook_dir), invocation_from_args(args)).text)
    return 0


def _cmd_help(args: argparse.Namespace) -> int:
    from bot.engine.help_text import help_text
    from bot.engine.runbook_dir import load_with_overrides

    print(help_text(load_with_overrides(_settings(args).runbook_dir), "cli"))
    return 0


def _cmd_runbooks(args: argparse.Namespace) -> int:
    from bot.engine.runbook_dir import check_with_overrides, default_runbook_dir

    directory = args.dir or _settings(args).runbook_dir or str(default_runbook_dir())
    if not Path(directory).is_dir():
        raise UsageError(f"not a directory: {printable(directory)}")
    problems = check_with_overrides(directory, None)[1]
    for line in problems:
        print(line)
    if problems:
        # runbooks are configuration the user fixes (the file:line lines above say where)
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return ExitCode.CONFIG
    print(f"{directory}: all runbooks valid")
    return 0


def _cmd_sim(args: argparse.Namespace) -> int:
    from bot.sim.runner import run_sim_foreground

    if not args.generate:
        return run_sim_foreground(resolve_scenario(args.scenario) if args.scenario else "")
    from bot.synth.command import generated_scenario, write_scenario

    data = generated_scenario(args.generate)
    if args.write:
        write_scenario(args.write, data)
        print(f"wrote {args.write}")
        return 0
    return run_sim_foreground("", data=data, source=f"generated({args.generate})")


def _cmd_serve(args: argparse.Namespace) -> int:
    from bot import event_loop
    from bot.server import serve

    settings = _settings(args)
    event_loop.run(serve(settings), settings.event_loop)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    return run_demo(as_json=output_format(args, args.spec) == "json")


def _cmd_act(args: argparse.Namespace) -> int:
    from bot.oneshot import run_act

    names = ("node", "pod", "namespace", "label", "value", "copy_from")
    params = {k: getattr(args, k) for k in names if getattr(args, k)}
    if args.scenario:
        args.scenario = resolve_scenario(args.scenario)
    return run_act(_settings(args), args.action, params, dry_run=args.dry_run, assume_yes=args.yes,
                   scenario=args.scenario)


def _cmd_audit(args: argparse.Namespace) -> int:
    from bot.oneshot import run_audit

    as_json = output_format(args, args.spec) == "json"
    return run_audit(_settings(args), since=args.since, as_json=as_json, limit=args.limit)


def _cmd_doctor(args: argparse.Namespace) -> int:
    from bot.doctor.render import render_doctor
    from bot.doctor.run import run_doctor, run_doctor_on_scenario

    cluster = args.cluster or ""
    settings = _with_kubeconfig(_settings(args), getattr(args, "kubeconfig", "") or "")
    settings = _node_access_and_scenario(args, _with_context(settings, "" if args.scenario else cluster))
    if args.scenario:
        report = asyncio.run(run_doctor_on_scenario(settings, args.scenario))
    else:
        report = asyncio.run(run_doctor(settings, cluster=cluster))
    if output_format(args, args.spec) == "json":
        import json

        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(render_doctor(report), end="")
    return int(report.exit_code)


def _cmd_capture(args: argparse.Namespace) -> int:
    from bot.capture.cli import capture_command

    settings = _with_kubeconfig(_settings(args), getattr(args, "kubeconfig", "") or "")
    return capture_command(args, _with_context(settings, args.cluster or ""))


def _cmd_completion(args: argparse.Namespace) -> int:
    from bot.console.completion import SHELLS, script

    if args.shell not in SHELLS:
        hint = did_you_mean(args.shell, SHELLS)
        raise UsageError(f"completion {printable(args.shell)}: use bash, zsh or fish{hint}")
    print(script(args.shell), end="")
    return 0


#: the handler of every CLI command that is not a diagnosis (those all go to _cmd_diagnose)
_HANDLERS: dict[str, Any] = {
    "runbook": _cmd_runbook,
    "help": _cmd_help,
    "runbooks validate": _cmd_runbooks,
    "sim": _cmd_sim,
    "serve": _cmd_serve,
    "demo": _cmd_demo,
    "audit": _cmd_audit,
    "act": _cmd_act,
    "capture": _cmd_capture,
    "doctor": _cmd_doctor,
    "completion": _cmd_completion,
}


def tune_gc() -> None:
    """Every gpubot command runs under these thresholds, ``serve`` included. A one-shot run builds
    many dicts from paged lists and frees little of what it keeps: the default thresholds would
    rescan that growing heap again and again; in the long-running bot a fleet-wide node-status
    allocates tens of thousands of objects that die with its report, which at the default paid
    ~120 young collections and a full one per question."""
    gc.set_threshold(50_000, 20, 20)


def main(argv: Sequence[str] | None = None) -> int:
    """``gpubot`` for in-process callers (tests): the cyclic collector is as it was on return,
    and the command's deadline counts from this call."""
    global _START
    collecting = gc.isenabled()
    _START = time.monotonic()
    try:
        return _main(argv)
    finally:
        _START = None
        if collecting:
            gc.enable()


def _main(argv: Sequence[str] | None = None) -> int:
    tune_gc()
    quiet_library_warnings()
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["__complete"]:  # hidden: what the completion scripts ask for (bot.console.completion)
        from bot.console.completion import complete_main

        return complete_main(words[1:])
    parser = build_parser(words)
    try:
        args = parser.parse_args(words)
        level = logging.DEBUG if args.verbose else logging.CRITICAL
        logging.basicConfig(level=level, handlers=[CurrentStderrHandler()])
        spec: Command | None = args.spec
        if spec is None:
            if not args.command:
                parser.print_help()
                return ExitCode.USAGE
            group = [usage(c, "cli") for c in commands_for("cli") if c.name.startswith(args.command + " ")]
            raise UsageError("usage: " + " | ".join(group))
        handler = _cmd_diagnose if spec.diagnosis else _HANDLERS[spec.name]
        return int(handler(args))
    except (UsageError, ConfigError, ScenarioError, RunbookError) as exc:
        first = exc.user_message.splitlines()[0] if exc.user_message else type(exc).__name__
        extra = len(exc.user_message.splitlines()) - 1
        print(f"gpubot: {first}" + (f" (+{extra} more)" if extra > 0 else ""), file=sys.stderr)
        return ExitCode.USAGE if isinstance(exc, UsageError) else ExitCode.CONFIG
    except GpubotError as exc:
        print(f"gpubot: {exc.user_message.splitlines()[0]}", file=sys.stderr)
        return ExitCode.INTERNAL
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - never a traceback for a user
        log.debug("internal error", exc_info=True)
        print(f"gpubot: internal error ({type(exc).__name__}); rerun with -v for details", file=sys.stderr)
        return ExitCode.INTERNAL


def run() -> NoReturn:
    """The ``gpubot`` process: ``main``, then an exit that skips freeing the heap object by object.

    A cold diagnosis of a large cluster ends with hundreds of MB of parsed API objects, and the
    interpreter's own teardown spent ~0.2 s freeing them after the answer was printed, time the
    user waits for a prompt. Output is flushed and ``atexit`` handlers (logging, finalizers) run
    first; only then does ``os._exit`` end the process, with ``main``'s exit status. In-process
    callers (tests) use ``main`` and keep the ordinary exit.
    """
    global _START, _EXITS_AFTER_ANSWER
    _START = process_start()
    _EXITS_AFTER_ANSWER = True
    code = _main()
    _flush_and_exit(code)


def _flush_and_exit(code: int) -> NoReturn:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # gpubot ... | head: the reader took what it wanted
        pass
    except (OSError, ValueError):  # the output could not be written (a full disk)
        code = code or 1
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    run()
