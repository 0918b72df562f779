"""The ``gpubot capture`` command line into a validated ``Request`` (names checked before any read)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from bot.capture.run import Request, run_capture
from bot.capture.select import Scope
from bot.errors import UsageError
from bot.names import printable, validate_name, validate_namespace
from bot.settings import Settings, with_node_access

NODE_SCOPES = ("gpu", "all")


def request_from_args(args: argparse.Namespace, settings: Settings) -> Request:
    namespaces = tuple(validate_namespace(n) for n in args.namespaces or ())
    pod = None
    if args.pod:
        pod = (namespaces[0] if namespaces else "default", validate_name(args.pod, what="pod name"))
    if args.nodes not in NODE_SCOPES:
        raise UsageError(f"--nodes {printable(args.nodes)}: use gpu or all")
    cluster = validate_name(args.cluster, what="cluster name") if args.cluster else settings.clusters[0].name
    output = args.output or f"capture-{cluster}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.yaml"
    scope = Scope(namespaces=namespaces, pod=pod, nodes=args.nodes, agent_namespace=settings.namespace)
    return Request(scope=scope, output=output, force=bool(args.force), anonymize=bool(args.anonymize))


def capture_command(args: argparse.Namespace, settings: Settings) -> int:
    """Validate, then capture (``bot.capture.run``)."""
    settings = with_node_access(settings, args.node_access)
    request = request_from_args(args, settings)
    return run_capture(settings, args.cluster or "", request)
