"""A qGPU operator image older than 3.0.2, the release the field notes name as leaking allocations."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypedDict

from bot.engine.check import Check, Code, Detection
from bot.engine.checks._common import asks_qgpu
from bot.engine.checks._qgpu import is_qgpu
from bot.engine.facts import Facts
from bot.kube.objects import meta_of


class QgpuOperatorOld(TypedDict):
    value: str


QGPU_OPERATOR_OLD = Code("QGPU_OPERATOR_OLD", QgpuOperatorOld)

MIN_OPERATOR_VERSION = (3, 0, 2)
_VERSION = re.compile(r":v?(\d+)\.(\d+)(?:\.(\d+))?")


def run(facts: Facts) -> Iterator[Detection]:
    """QGPU_OPERATOR_OLD with the image."""
    pod = facts.pod
    if pod is None or not asks_qgpu(pod):
        return
    for ctrl in facts.components.controllers:
        meta = meta_of(ctrl)
        if not is_qgpu(ctrl) or "operator" not in str(meta.get("name", "")):
            continue
        containers = (((ctrl.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        for container in containers:
            image = str(container.get("image", ""))
            match = _VERSION.search(image.rsplit("/", 1)[-1])
            if not match:
                continue
            version = tuple(int(part or 0) for part in match.groups())
            if version < MIN_OPERATOR_VERSION:
                yield QGPU_OPERATOR_OLD.detect(
                    f"{str(ctrl.get('kind', '')).lower()}/{meta.get('namespace')}/{meta.get('name')}",
                    {"value": ".".join(map(str, version))},
                    evidence=[f"{meta.get('namespace')}/{meta.get('name')}: image {image}"],
                )
                return


CHECK = Check(name="qgpu.operator_version", reads=("pod", "components"), emits=(QGPU_OPERATOR_OLD,), run=run)
