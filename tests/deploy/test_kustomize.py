"""The Kustomize targets render the Helm chart through Kustomize's own ``helmCharts``: what
``kubectl kustomize --enable-helm`` prints for each is exactly what ``helm template`` prints for
the values it declares, so deploy/kustomize holds values, never a second copy of a manifest.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.deploy.render import (
    CHART,
    KUSTOMIZE,
    NAMESPACE,
    RELEASE,
    kustomize_targets,
    kustomize_text,
    one,
    parse,
    render,
)

TARGETS = kustomize_targets()


def _key(obj: dict) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def test_the_targets_are_the_base_and_one_overlay_per_switch() -> None:
    assert TARGETS == [
        "base",
        "overlays/container-probes",
        "overlays/http-mode",
        "overlays/remediation",
        "overlays/ssh",
        "overlays/tke-qgpu",
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_target_is_only_the_chart_with_values(target: str) -> None:
    """No resources, patches or generators of its own: the chart is the one source."""
    kustomization = yaml.safe_load((KUSTOMIZE / target / "kustomization.yaml").read_text(encoding="utf-8"))
    assert set(kustomization) == {"apiVersion", "kind", "helmGlobals", "helmCharts"}
    assert (KUSTOMIZE / target / kustomization["helmGlobals"]["chartHome"]).resolve() == CHART.parent
    (chart,) = kustomization["helmCharts"]
    assert set(chart) == {"name", "releaseName", "namespace", "valuesInline"}
    assert (chart["name"], chart["releaseName"], chart["namespace"]) == ("gpubot", RELEASE, NAMESPACE)
    assert chart["valuesInline"]["namespace"] == {"create": True}, "kubectl apply needs the namespace too"
    assert sorted(p.name for p in (KUSTOMIZE / target).iterdir()) == ["kustomization.yaml"]


@pytest.mark.parametrize("target", TARGETS)
def test_target_renders_what_helm_renders(target: str) -> None:
    kustomization = yaml.safe_load((KUSTOMIZE / target / "kustomization.yaml").read_text(encoding="utf-8"))
    values = kustomization["helmCharts"][0]["valuesInline"]
    by_kustomize = {_key(o): o for o in parse(kustomize_text(KUSTOMIZE / target))}
    by_helm = {_key(o): o for o in render(values)}
    assert set(by_kustomize) == set(by_helm)
    for key, obj in by_helm.items():
        assert by_kustomize[key] == obj, f"{target}: {key} differs from helm template"
    assert ("Namespace", "", NAMESPACE) in by_helm


def test_users_kustomization_sets_the_image_on_top(tmp_path: Path) -> None:
    """Kustomize's own transformers still apply to the rendered chart (deploy/README.md)."""
    mine = tmp_path / "my-gpubot"
    mine.mkdir()
    (mine / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(KUSTOMIZE / "overlays" / "remediation", mine)],
                "images": [
                    {"name": "ghcr.io/gpubot/gpubot", "newName": "registry.mycorp.com/gpubot", "newTag": "9.9.9"}
                ],
            }
        )
    )
    objs = parse(kustomize_text(mine))
    container = one(objs, "Deployment", "gpubot")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.mycorp.com/gpubot:9.9.9"
    assert one(objs, "ClusterRole", "gpubot-remediation")
