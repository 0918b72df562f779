"""CUDA newer than the node's driver: the words CUDA, PyTorch and the NVIDIA runtime hook use for
it, the CUDA version an image or its environment asks for, and the node driver's CUDA as GPU
Feature Discovery labels it.

CUDA is backward compatible only: a driver runs programs built for its own CUDA version or older
(minor versions within one major are compatible from CUDA 11 on, with the compat package). A
container built for a newer CUDA dies at its first CUDA call, or is refused at creation when the
image states ``NVIDIA_REQUIRE_CUDA`` and the runtime hook checks it. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.kube.objects import labels_of

Obj = Mapping[str, Any]

#: (pattern, kind): what a container or the kubelet says when the driver is too old for the CUDA in the image
MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"requirement error: unsatisfied condition: cuda\s*>=\s*(?P<cuda>\d+(?:\.\d+)?)"), "requirement"),
    (re.compile(r"CUDA driver version is insufficient for CUDA runtime version"), "insufficient"),
    (re.compile(r"forward compatibility was attempted on non supported HW"), "forward_compat"),
    (re.compile(r"unsupported display driver / cuda driver combination"), "unsupported_combo"),
    (re.compile(r"The NVIDIA driver on your system is too old \(found version (?P<found>\d{4,6})\)"), "too_old"),
)
_TAG_CUDA = (
    re.compile(r"(?:^|[-_.])cuda[-_]?v?(?P<v>\d{1,2}\.\d{1,2})", re.I),      # cuda12.4, -cuda12.1-, cuda_11.8
    re.compile(r"(?:^|[-_.+])cu(?P<major>1\d)(?P<minor>\d)(?:$|[-_.+])"),     # cu121, +cu118
)
_CUDA_REPO_TAG = re.compile(r"^(?P<v>\d{1,2}\.\d{1,2})(?:\.\d+)?-")           # nvidia/cuda:12.4.1-runtime-…
_REQUIRE = re.compile(r"cuda\s*>=\s*(?P<v>\d+\.\d+)")


@dataclass(frozen=True)
class CudaMessage:
    """A container or kubelet message that says the driver is too old for the container's CUDA."""

    kind: str
    #: the CUDA version the message names as needed ("12.4"), if it names one
    needs: str
    #: the driver's CUDA the message names ("12.4" from PyTorch's "found version 12040"), if any
    driver_cuda: str
    text: str


def parse_message(text: str) -> CudaMessage | None:
    """The first CUDA-too-new wording in ``text``; None when there is none."""
    for pattern, kind in MESSAGES:
        match = pattern.search(text or "")
        if match is None:
            continue
        groups = match.groupdict()
        found = groups.get("found") or ""
        driver_cuda = f"{int(found) // 1000}.{int(found) % 1000 // 10}" if found else ""
        start = max(0, match.start() - 200)
        if start:
            start = text.find(" ", start) + 1  # a whole word first
        return CudaMessage(kind, groups.get("cuda") or "", driver_cuda, text[start: match.end() + 200].strip())
    return None


def image_cuda(image: str) -> str:
    """The CUDA version an image reference names in its tag (``cuda12.4``, ``cu121``, ``nvidia/cuda:12.4.1-…``)."""
    last = image.rsplit("/", 1)[-1]
    repo, _, tag = last.partition(":")
    tag = tag.split("@", 1)[0]
    if not tag:
        return ""
    if repo == "cuda" and (m := _CUDA_REPO_TAG.match(tag)) is not None:
        return m.group("v")
    for pattern in _TAG_CUDA:
        match = pattern.search(tag)
        if match is not None:
            groups = match.groupdict()
            return groups.get("v") or f"{groups['major']}.{groups['minor']}"
    return ""


def env_cuda(container: Obj) -> tuple[str, str]:
    """(CUDA version, the variable) the container's spec env asks for: NVIDIA_REQUIRE_CUDA, CUDA_VERSION."""
    env = {str(e.get("name")): str(e.get("value") or "") for e in container.get("env") or [] if isinstance(e, Mapping)}
    required = _REQUIRE.search(env.get("NVIDIA_REQUIRE_CUDA", ""))
    if required is not None:
        return required.group("v"), "NVIDIA_REQUIRE_CUDA"
    version = re.match(r"(\d+\.\d+)", env.get("CUDA_VERSION", ""))
    return (version.group(1), "CUDA_VERSION") if version else ("", "")


def node_label_cuda(node: Obj) -> tuple[str, str]:
    """(driver version, highest CUDA it supports) from GPU Feature Discovery's labels, new and old names."""
    labels = labels_of(node)
    driver = labels.get("nvidia.com/cuda.driver-version.full") or ".".join(
        str(labels[k]) for k in ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                                 "nvidia.com/cuda.driver.rev") if labels.get(k))
    cuda = labels.get("nvidia.com/cuda.runtime-version.full") or ""
    if not cuda:
        for major, minor in (("nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor"),
                             ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")):
            if labels.get(major):
                cuda = f"{labels[major]}.{labels.get(minor) or 0}"
                break
    return str(driver), str(cuda)
