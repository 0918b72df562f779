"""``gpubot capture``: read a live cluster as the bot does and write it as a redacted scenario.

Reads the API (``CaptureReader``: lists only, never a Secret or ConfigMap), chooses what to keep
(``select``), reads each GPU node through the configured node transport (the allow-listed read
commands, the usual per-node deadline; a node that does not answer is captured as unreachable
with the reason), redacts (``redact``) and writes the file (``document``). Nothing here writes
to the cluster.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.capture.anonymize import apply_mapping, build_mapping, rename_keys
from bot.capture.api import CaptureReader
from bot.capture.document import Capture, render
from bot.capture.node_facts import failed_node, node_section
from bot.capture.redact import Redactions, redact_objects, scrub_document
from bot.capture.select import ClusterObjects, Scope, gpu_node_names, select
from bot.capture.transport import Recorder, agent_transport, ssh_transport
from bot.engine.gather.node import agents_unlisted
from bot.errors import GpubotError, NodeProbeError, UsageError
from bot.names import printable
from bot.probes.exec import PodExec
from bot.probes.kube_client import new_api_client
from bot.probes.node import NodeObservation, NodeTransport, observe_many
from bot.probes.node_access import decide
from bot.settings import ClusterConfig, Settings

Obj = dict[str, Any]
#: notes printed after a capture (all of them are in the file)
SHOWN_NOTES = 5


@dataclass(frozen=True)
class Request:
    """One ``gpubot capture`` command line, validated."""

    scope: Scope
    #: a file path, or "-" for stdout
    output: str
    force: bool = False
    #: rename nodes, namespaces, pods and workloads consistently (``bot.capture.anonymize``)
    anonymize: bool = False


def check_output(output: str, *, force: bool) -> None:
    """Refuse before reading anything: an existing file without ``--force``, a missing folder."""
    if output == "-":
        return
    path = Path(output)
    if path.exists() and not force:
        raise UsageError(f"{printable(output)} exists; use --force to overwrite it, or -o - for stdout")
    if not path.parent.is_dir():
        raise UsageError(f"cannot write {printable(output)}: no such folder")


async def _read_nodes(
    settings: Settings, cluster: ClusterConfig, reader: CaptureReader, nodes: dict[str, Obj]
) -> tuple[dict[str, NodeObservation | NodeProbeError], Recorder]:
    recorder = Recorder()
    failed: dict[str, NodeProbeError] = {}
    transport: NodeTransport | None
    exec_api = new_api_client(cluster) if settings.node_access == "agent" else None
    try:
        if exec_api is not None:
            try:
                transport = await agent_transport(
                    reader, PodExec(exec_api).run_read, settings.namespace, nodes, recorder
                )
            except GpubotError as exc:
                transport, failed = None, agents_unlisted(nodes, exc)
        else:
            transport, failed = ssh_transport(settings, cluster, nodes, recorder)
        results: dict[str, NodeObservation | NodeProbeError] = dict(failed)
        if transport is not None:
            todo = sorted(n for n in nodes if n not in failed)
            results.update(
                await observe_many(
                    transport, todo, concurrency=settings.ssh_concurrency, deadline=settings.ssh_deadline_s
                )
            )
    finally:
        if exec_api is not None:
            exec_api.close()
    return results, recorder


async def capture(settings: Settings, cluster_name: str, scope: Scope, *, anonymize: bool = False) -> Capture:
    """Read, select, read the GPU nodes, redact: the capture, ready to render."""
    cluster = settings.cluster(cluster_name or None)
    reader = CaptureReader(new_api_client(cluster), page_size=settings.page_size, timeout=settings.api_timeout_s)
    try:
        read, version = await asyncio.gather(reader.read_cluster(), reader.server_version())
        kept = select(read, scope)
        gpu = gpu_node_names(kept.nodes, kept.pods)  # the bot's judgement, its own agents left out
        nodes = {str(n["metadata"]["name"]): n for n in kept.nodes if n["metadata"].get("name") in gpu}
        decision = await decide(settings, cluster, reader)
        notes = [decision.why] if decision.transport == "none" and nodes else []
        if decision.transport != "none":
            settings = replace(settings, node_access=decision.transport)
        nodes = nodes if decision.transport != "none" else {}
        results, recorder = await _read_nodes(settings, cluster, reader, nodes)
    finally:
        reader.close()
    cap = _assemble(settings, cluster, replace(kept, notes=[*kept.notes, *notes]), version, results, recorder)
    return anonymized(cap, settings.namespace) if anonymize else cap


def _assemble(
    settings: Settings,
    cluster: ClusterConfig,
    kept: ClusterObjects,
    version: str,
    results: dict[str, NodeObservation | NodeProbeError],
    recorder: Recorder,
) -> Capture:
    tally = Redactions()
    notes: list[str] = list(kept.notes)
    sections: dict[str, Obj] = {}
    unreachable: dict[str, str] = {}
    for node, result in sorted(results.items()):
        if isinstance(result, NodeProbeError):
            sections[node] = failed_node(result)
            unreachable[node] = str(result)
            continue
        node_notes: list[str] = []
        sections[node] = node_section(result, recorder.raw.get(node, {}), node_notes)
        notes += [f"{node}: {n}" for n in node_notes + result.notes]
    objects = redact_objects(kept.all(), tally)
    sections = scrub_document(sections, tally)
    return Capture(
        cluster=cluster.name,
        taken_at=datetime.now(UTC),
        node_access=settings.node_access,
        version=version,
        objects=objects,
        nodes=sections,
        unreachable=scrub_document(unreachable, tally),
        notes=scrub_document(notes, tally),
        redacted=tally.summary(),
    )


def anonymized(cap: Capture, agent_namespace: str) -> Capture:
    """``cap`` with names renamed consistently; the mapping is kept beside it, not in the file."""
    mapping = build_mapping(cap.objects, keep_namespaces=(agent_namespace,))
    return replace(
        cap,
        cluster="anonymized",
        objects=apply_mapping(cap.objects, mapping),
        nodes=rename_keys(cap.nodes, mapping),
        unreachable=rename_keys(cap.unreachable, mapping),
        notes=apply_mapping(cap.notes, mapping),
        mapping=mapping,
    )


def write_capture(cap: Capture, output: str, *, force: bool) -> str:
    """Write the file (or stdout for "-"); returns where it went."""
    text = render(cap)
    if output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return "stdout"
    check_output(output, force=force)
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {printable(output)}: {exc.strerror}") from None
    return output


def run_capture(settings: Settings, cluster_name: str, request: Request) -> int:
    """The CLI's entry: check the output, capture, write, and say what was kept and redacted."""
    check_output(request.output, force=request.force)
    cap = asyncio.run(capture(settings, cluster_name, request.scope, anonymize=request.anonymize))
    where = write_capture(cap, request.output, force=request.force)
    kinds = len(cap.objects)
    print(
        f"captured {kinds} objects and {len(cap.nodes)} GPU node(s) "
        f"({len(cap.unreachable)} unreachable) to {printable(where)}",
        file=sys.stderr,
    )
    for _node, why in sorted(cap.unreachable.items()):
        print(f"  unreachable: {printable(why)}", file=sys.stderr)
    for note in cap.notes[:SHOWN_NOTES]:
        print(f"  note: {printable(note)}", file=sys.stderr)
    if len(cap.notes) > SHOWN_NOTES:
        print(f"  … and {len(cap.notes) - SHOWN_NOTES} more notes (capture.notes in the file)", file=sys.stderr)
    print(f"redacted: {cap.redacted}", file=sys.stderr)
    if cap.mapping:
        print(f"anonymized {len(cap.mapping)} names (the mapping is not in the file):", file=sys.stderr)
        for old, new in sorted(cap.mapping.items(), key=lambda item: item[1]):
            print(f"  {new} = {printable(old)}", file=sys.stderr)
    return 0
