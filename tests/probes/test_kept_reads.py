"""Every read over a kept connection answers what the official client's method answers.

``KubeReader`` sends its GETs over kept connections where the client's settings allow it, building
the path and query the client's method would. Here each read of two bundled scenarios (core and
apps objects, a Job, Kueue's custom resources) is made twice against the simulator's API server:
once that way and once through the client (a reader whose kept connections are turned off). The
answers, the pages walked and the call names in ``ReadStats`` (what RBAC and the benchmarks count)
must be the same, and so must a read the server refuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.errors import NotFoundError
from bot.kube.custom_resources import declared
from bot.probes.kube import _READERS, KubeReader
from bot.probes.kube_client import new_api_client
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ["kueue-admitted-job-still-suspended-k8s130.yaml", "mig-mixed-healthy-k8s131.yaml"]


async def _everything(reader: KubeReader, objects: list[dict[str, Any]]) -> list[Any]:
    """Each object read on its own, then every list the diagnoses make, with and without selectors."""
    out: list[Any] = []
    namespaces = sorted({str((o.get("metadata") or {}).get("namespace") or "") for o in objects} - {""})
    for o in objects:
        meta = o.get("metadata") or {}
        kind, name, ns = str(o.get("kind")), str(meta.get("name")), str(meta.get("namespace") or "")
        if kind in _READERS:
            out.append(await reader.get_object(kind, name, ns))
        group, _, version = str(o.get("apiVersion")).rpartition("/")
        plural = kind.lower() + "s"
        if group and declared(group, plural):
            out.append(await reader.get_custom(group, version, plural, name, ns))
            out.append(await reader.list_custom(group, version, plural, ns))
    out += [await reader.list_nodes(), await reader.list_namespaces(), await reader.list_daemonsets(),
            await reader.list_deployments(), await reader.list_pods(), await reader.list_events("")]
    out.append(await reader.list_pods(field_selector="status.phase!=Running,status.phase!=Succeeded"))
    out.append(await reader.list_nodes(label_selector="nvidia.com/gpu.present=true"))
    for ns in namespaces:
        out += [await reader.list_pods(ns), await reader.list_events(ns, field_selector="type=Warning"),
                await reader.list_replicasets(ns), await reader.list_resourcequotas(ns)]
    out.append(await reader.slim_pods())
    return out


@pytest.mark.parametrize("name", SCENARIOS)
async def test_kept_reads_answer_what_the_client_answers(name: str, tmp_path: Path) -> None:
    scenario = load_scenario(ROOT / "scenarios" / name)
    objects = [o for o in scenario.objects if isinstance(o, dict)]
    async with SimCluster(scenario, workdir=tmp_path) as sim:
        cluster = sim.settings().clusters[0]
        kept = KubeReader(new_api_client(cluster), page_size=3)  # small pages: the continue tokens too
        plain = KubeReader(new_api_client(cluster), page_size=3)
        plain._gets = None  # what a proxy or impersonation makes it: the client's own methods
        try:
            assert kept._gets is not None
            assert await _everything(kept, objects) == await _everything(plain, objects)
            for reader in (kept, plain):
                with pytest.raises(NotFoundError):
                    await reader.get_object("Pod", "no-such-pod", "default")
        finally:
            kept.close()
            plain.close()
    assert kept.stats.by_call == plain.stats.by_call
    assert kept.stats.requests == plain.stats.requests > len(objects)
