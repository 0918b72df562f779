"""Loader of what the target pod's GPU containers see: the allow-listed exec reads.

Only the fixed argv lists of ``bot.probes.exec.EXEC_COMMANDS`` run; no pod, namespace or user
text ever becomes part of a command, and only GPU-related environment variables are kept.
"""

from __future__ import annotations

import asyncio

from bot.engine.facts import Facts
from bot.engine.gather.sources import Sources
from bot.kube.objects import meta_of
from bot.probes.container import ExecFacts, containers_to_examine, examine_container, running_containers


async def containers(facts: Facts, src: Sources) -> None:
    pod = facts.target.pod
    if pod is None:
        facts.put("containers", None)
        return  # pod.lookup reports the missing pod
    meta = meta_of(pod)
    ns, name = str(meta.get("namespace") or facts.target.namespace), str(meta.get("name") or facts.target.name)
    out = ExecFacts(namespace=ns, pod=name, node=str((pod.get("spec") or {}).get("nodeName") or ""))
    facts.put("containers", out)
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    where = f"exec into {ns}/{name}"
    if meta.get("deletionTimestamp"):
        facts.skip(where, "the pod is Terminating")
        return
    if phase != "Running":
        facts.skip(where, f"the pod is {phase}: no running container to look into")
        return
    if src.exec_fn is None:
        facts.skip(where, src.exec_unavailable)
        return
    running = running_containers(pod)
    targets = []
    for container, gpu in containers_to_examine(pod):
        if running is not None and container not in running:
            facts.skip(f"{where}/{container}", "the container is not running")
        else:
            targets.append((container, gpu))
    exec_fn = src.exec_fn
    views = await asyncio.gather(*(examine_container(exec_fn, ns, name, c, gpu) for c, gpu in targets))
    for view in views:
        if not view.reachable:
            errors = sorted({o.error for o in view.outputs.values() if o.error})
            facts.skip(f"{where}/{view.container}", "; ".join(errors)[:300] or "exec failed")
            continue
        failed = [n for n, o in view.outputs.items() if not o.ran]
        if failed:
            facts.skip(
                f"{', '.join(failed)} in {ns}/{name}/{view.container}",
                "; ".join(sorted({view.outputs[n].error for n in failed}))[:300],
            )
        out.containers.append(view)
