"""The ``gpubot`` command line: the same commands as Slack, printed as text or JSON.

Exit codes: 0 when a diagnosis was produced (POD_NOT_FOUND is a diagnosis), 2 on bad usage or an
invalid name (one line on stderr, never a traceback), 1 on an unexpected internal error.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from bot.commands import Invocation, parse_invocation
from bot.errors import ConfigError, GpubotError, ScenarioError, UsageError
from bot.render_text import render_text
from bot.report import Report
from bot.settings import ClusterConfig, Settings, load_settings

log = logging.getLogger("gpubot")

DIAGNOSTIC = ("why-pending", "node-status", "nvml", "verify")


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exit 2, without the usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namespace", default="", help="namespace (default: default)")
    _add_cluster_options(p)


def _add_cluster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--context", default="", help="kubeconfig context or configured cluster name")
    p.add_argument("--scenario", default="", help="run against a fresh simulator of this scenario file")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpubot", description="Why is my GPU workload not running, and what to do about it."
    )
    parser.add_argument("--config", default="", help="settings YAML file (also GPUBOT_CONFIG)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    p = sub.add_parser("why-pending", help="why a GPU pod or workload does not run")
    p.add_argument("target", help="POD or KIND/NAME (deployment/x, statefulset/x, job/x)")
    _add_target_options(p)
    p = sub.add_parser("node-status", help="logical allocation beside the physical truth, per GPU node")
    p.add_argument("nodes", nargs="*", help="nodes (default: every GPU node)")
    _add_cluster_options(p)
    for name, text in (
        ("nvml", "NVML / device access inside a pod's GPU containers"),
        ("verify", "the container GPU verification chain"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("target", help="POD")
        _add_target_options(p)
    p = sub.add_parser("runbook", help="list the guides, or print one")
    p.add_argument("name", nargs="?", default="")
    p = sub.add_parser("runbooks", help="runbook maintenance")
    rsub = p.add_subparsers(dest="runbooks_command", metavar="validate", parser_class=_Parser)
    v = rsub.add_parser("validate", help="validate every runbook file in DIR (default: the configured one)")
    v.add_argument("dir", nargs="?", default="")
    p = sub.add_parser("sim", help="serve a scenario as a simulated cluster (Kubernetes API + SSH nodes)")
    p.add_argument("scenario", nargs="?", default="", help="scenario YAML file")
    p.add_argument("--generate", default="", help="nodes=N,gpu_nodes=G,pods=P,seed=S: a generated scenario")
    p.add_argument("--write", default="", help="with --generate: write the scenario YAML here and exit")
    sub.add_parser("serve", help="run the Slack bot (Socket Mode or HTTP mode, from settings)")
    p = sub.add_parser("demo", help="run the built-in demo on the bundled scenarios")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("act", help="run one remediation after showing its plan (typed confirmation)")
    p.add_argument("action", help="e.g. kubelet.restart, checkpoint.clear, pod.delete, namespace.label")
    p.add_argument("--node", default="")
    p.add_argument("--pod", default="")
    p.add_argument("-n", "--namespace", default="")
    p.add_argument("--label", default="")
    p.add_argument("--value", default="")
    p.add_argument("--copy-from", default="")
    p.add_argument("--dry-run", action="store_true", help="check and print the exact steps; change nothing")
    p.add_argument("--yes", action="store_true", help="skip typing the target name (automation)")
    p.add_argument("--scenario", default="", help="run against a fresh simulator of this scenario file")
    p = sub.add_parser("audit", help="print the audit trail")
    p.add_argument("--since", default="", help="30m, 2h, 7d or an ISO timestamp")
    p.add_argument("--json", action="store_true")
    p.add_argument("--limit", type=int, default=200)
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
    argv = [args.command]
    if args.command == "node-status":
        argv += list(args.nodes)
    else:
        argv.append(args.target)
        if args.namespace:
            argv += ["-n", args.namespace]
    if getattr(args, "context", ""):
        argv += ["--cluster", args.context]
    return parse_invocation(argv)


def _emit(report: Report, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print(render_text(report), end="")


def _cmd_diagnose(args: argparse.Namespace) -> int:
    inv = invocation_from_args(args)
    settings = _with_context(_settings(args), "" if args.scenario else args.context)
    if args.scenario and not Path(args.scenario).is_file():
        raise UsageError(f"scenario file not found: {args.scenario}")
    from bot.oneshot import run_invocation

    report = asyncio.run(run_invocation(inv, settings, scenario=args.scenario))
    _emit(report, args.json)
    return 0


def _cmd_runbook(args: argparse.Namespace) -> int:
    from bot.service import Service

    inv = parse_invocation(["runbook"] + ([args.name] if args.name else []))
    service = Service(_settings(args))
    print(service._runbook(inv).text)
    return 0


def _cmd_runbooks(args: argparse.Namespace) -> int:
    from bot.engine.runbooks import default_runbook_dir, validate_dir

    if args.runbooks_command != "validate":
        raise UsageError("usage: gpubot runbooks validate [DIR]")
    directory = args.dir or _settings(args).runbook_dir or str(default_runbook_dir())
    if not Path(directory).is_dir():
        raise UsageError(f"not a directory: {directory}")
    problems = validate_dir(directory)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{directory}: all runbooks valid")
    return 0


def _cmd_sim(args: argparse.Namespace) -> int:
    from bot.sim.runner import run_sim_foreground

    return run_sim_foreground(args.scenario, generate=args.generate, write=args.write)


def _cmd_serve(args: argparse.Namespace) -> int:
    from bot.server import serve

    asyncio.run(serve(_settings(args)))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    return run_demo(as_json=args.json)


def _cmd_act(args: argparse.Namespace) -> int:
    from bot.oneshot import run_act

    names = ("node", "pod", "namespace", "label", "value", "copy_from")
    params = {k: getattr(args, k) for k in names if getattr(args, k)}
    if args.scenario and not Path(args.scenario).is_file():
        raise UsageError(f"scenario file not found: {args.scenario}")
    return run_act(_settings(args), args.action, params, dry_run=args.dry_run, assume_yes=args.yes,
                   scenario=args.scenario)


def _cmd_audit(args: argparse.Namespace) -> int:
    from bot.remediation.terminal import print_audit

    return print_audit(_settings(args), since=args.since, as_json=args.json, limit=args.limit)


_HANDLERS: dict[str, Any] = {
    "runbook": _cmd_runbook,
    "runbooks": _cmd_runbooks,
    "sim": _cmd_sim,
    "serve": _cmd_serve,
    "demo": _cmd_demo,
    "audit": _cmd_audit,
    "act": _cmd_act,
}


def tune_gc_for_one_shot() -> None:
    """A one-shot run builds many dicts from paged lists and frees little of what it keeps: the
    default GC thresholds would rescan that growing heap again and again."""
    gc.set_threshold(50_000, 20, 20)


def main(argv: Sequence[str] | None = None) -> int:
    tune_gc_for_one_shot()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        logging.basicConfig(level=logging.DEBUG if args.verbose else logging.CRITICAL, stream=sys.stderr)
        if not args.command:
            parser.print_help()
            return 2
        handler = _cmd_diagnose if args.command in DIAGNOSTIC else _HANDLERS[args.command]
        return int(handler(args))
    except (UsageError, ConfigError, ScenarioError) as exc:
        first = exc.user_message.splitlines()[0] if exc.user_message else type(exc).__name__
        extra = len(exc.user_message.splitlines()) - 1
        print(f"gpubot: {first}" + (f" (+{extra} more)" if extra > 0 else ""), file=sys.stderr)
        return 2
    except GpubotError as exc:
        print(f"gpubot: {exc.user_message.splitlines()[0]}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback for a user
        log.debug("internal error", exc_info=True)
        print(f"gpubot: internal error ({type(exc).__name__}); rerun with -v for details", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
