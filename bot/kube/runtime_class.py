"""A pod whose runtime handler or RuntimeClass the node or the API does not have.

``runtimeClassName: nvidia`` names a RuntimeClass object, whose ``handler`` the node's container
runtime must have configured (containerd ``runtimes.nvidia``, CRI-O ``[crio.runtime.runtimes.nvidia]``).
A missing RuntimeClass refuses the pod at creation (``pod rejected: RuntimeClass "nvidia" not
found``); a handler the node lacks fails every sandbox (``FailedCreatePodSandBox … no runtime for
"nvidia" is configured``). No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import meta_of

Obj = Mapping[str, Any]

#: (pattern with a ``name`` group, kind): handler = the node's runtime lacks it, class = no such RuntimeClass
PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'no runtime for "(?P<name>[^"]+)" is configured'), "handler"),
    (re.compile(r"failed to find runtime handler (?P<name>\S+) from runtime list"), "handler"),
    (re.compile(r'RuntimeHandler "(?P<name>[^"]+)" not supported'), "handler"),
    (re.compile(r"unknown runtime handler:? \"?(?P<name>[^\"\s,]+)"), "handler"),
    (re.compile(r'RuntimeClass "(?P<name>[^"]+)" not found'), "class"),
)
#: what a GPU container prints when nothing injected the driver into it (no nvidia runtime, no CDI)
NO_DRIVER = re.compile(
    r'exec: "nvidia-smi": executable file not found|nvidia-smi: (?:command )?not found'
    r"|libnvidia-ml\.so\.1: cannot open shared object file|Found no NVIDIA driver on your system"
    r"|NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
    r"|no CUDA-capable device is detected|CUDA driver initialization failed",
)


@dataclass(frozen=True)
class RuntimeRefusal:
    """A refusal found in a kubelet or API message: whether the RuntimeClass or the node's handler is
    missing decides the fix, so the kind is kept beside the name and the quoted text."""

    kind: str
    name: str
    text: str


def parse(text: str) -> RuntimeRefusal | None:
    """The runtime refusal in a kubelet or API message, or None."""
    for pattern, kind in PATTERNS:
        match = pattern.search(text or "")
        if match is not None:
            return RuntimeRefusal(kind, match.group("name").strip('"'), text.strip())
    return None


def stack_runtime_class(controllers: Sequence[Obj]) -> tuple[str, str]:
    """(RuntimeClass, the controller that uses it) when the GPU stack's own pods run with a
    runtimeClassName: the nvidia runtime is then not the node's default, and a GPU pod needs it too."""
    for ctrl in controllers:
        template = ((ctrl.get("spec") or {}).get("template") or {}).get("spec") or {}
        name = template.get("runtimeClassName")
        if name:
            meta = meta_of(ctrl)
            kind = str(ctrl.get("kind") or "DaemonSet").lower()
            return str(name), f"{kind}/{meta.get('namespace')}/{meta.get('name')}"
    return "", ""
