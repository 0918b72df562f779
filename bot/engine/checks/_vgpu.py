"""What the vGPU checks share: where HAMi's and tkestack's components run and how they are set up."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from bot.engine.facts import Facts, per_cluster
from bot.kube.objects import Obj, annotations_of, meta_of, name_of
from bot.kube.resources import gpu_family, pod_gpu_requests
from bot.kube.vgpu import HAMI_DEFAULT_SCHEDULER, HAMI_NODE_SELECTOR, HAMI_REGISTER, flag_value

#: name fragments of HAMi's scheduler Deployment (the 4paradigm chart called it vgpu-scheduler)
HAMI_SCHEDULER_NAMES = ("hami-scheduler", "vgpu-scheduler")
#: name fragments of HAMi's NVIDIA device-plugin DaemonSet
HAMI_PLUGIN_NAMES = ("hami-device-plugin", "vgpu-device-plugin")
#: name fragments of tkestack's scheduler extender
VCUDA_ADMISSION_NAMES = ("gpu-admission", "gpu-quota-admission")


def name(obj: Obj) -> str:
    return name_of(obj)


def ref(obj: Obj) -> str:
    meta = meta_of(obj)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _named(objs: Iterable[Obj], fragments: tuple[str, ...]) -> list[Obj]:
    return [o for o in objs if any(f in name(o).lower() for f in fragments)]


def _commands(obj: Obj) -> list[str]:
    """Every command and argument word of a pod or a controller's pod template."""
    spec = obj.get("spec") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or spec
    words: list[str] = []
    for container in pod_spec.get("containers") or []:
        for key in ("command", "args"):
            value = (container or {}).get(key)
            if isinstance(value, list):
                words += [str(w) for w in value]
    return words


def pod_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or meta_of(pod).get("deletionTimestamp"):
        return False
    return all((c or {}).get("ready") for c in status.get("containerStatuses") or [{}])


def pod_state(pod: Obj) -> str:
    """``Running``, ``CrashLoopBackOff (restarts 12)``, ``Pending``… as kubectl would sum it up."""
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    for c in status.get("containerStatuses") or []:
        waiting = ((c or {}).get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f"{waiting['reason']} (restarts {c.get('restartCount', 0)})"
    if phase == "Running" and not pod_ready(pod):
        return "Running, not ready"
    return phase


@dataclass
class HamiInstall:
    """HAMi's scheduler and device plugin as found among the GPU components."""

    schedulers: list[Obj] = field(default_factory=list)
    scheduler_pods: list[Obj] = field(default_factory=list)
    plugins: list[Obj] = field(default_factory=list)
    plugin_pods: list[Obj] = field(default_factory=list)

    @property
    def installed(self) -> bool:
        return bool(self.schedulers or self.scheduler_pods)

    def _flag(self, flag: str) -> str | None:
        for obj in [*self.schedulers, *self.scheduler_pods]:
            value = flag_value(_commands(obj), flag)
            if value is not None:
                return value
        return None

    @property
    def scheduler_name(self) -> str:
        """The name HAMi's webhook writes into pods (``--scheduler-name``, hami-scheduler by default)."""
        return self._flag("--scheduler-name") or HAMI_DEFAULT_SCHEDULER

    @property
    def force_overwrite(self) -> bool | None:
        """``--force-overwrite-default-scheduler``; None when the flag is not set (older HAMi)."""
        value = self._flag("--force-overwrite-default-scheduler")
        return None if value is None else value.strip().lower() not in ("false", "0", "no")

    @property
    def node_selector(self) -> dict[str, str]:
        """The labels the device-plugin DaemonSet needs on a node (the chart's gpu=on by default)."""
        for ds in self.plugins:
            selector = ((((ds.get("spec") or {}).get("template") or {}).get("spec")) or {}).get("nodeSelector")
            if isinstance(selector, dict) and selector:
                return {str(k): str(v) for k, v in selector.items()}
        return dict(HAMI_NODE_SELECTOR)

    def plugin_pods_on(self, node: str) -> list[Obj]:
        return [p for p in self.plugin_pods if (p.get("spec") or {}).get("nodeName") == node]

    def hami_nodes(self, facts: Facts) -> set[str]:
        """Nodes HAMi serves: registered with its scheduler, or running its device plugin."""
        out = {n for n, o in facts.nodes.items()
               if HAMI_REGISTER in (annotations_of(o))}
        return out | {str((p.get("spec") or {}).get("nodeName")) for p in self.plugin_pods
                      if (p.get("spec") or {}).get("nodeName")}


@per_cluster("components")  # two checks of every diagnosis ask, each over every GPU-stack pod
def hami_install(facts: Facts) -> HamiInstall:
    comps = facts.components
    plugin_pods = _named(comps.pods, HAMI_PLUGIN_NAMES)
    return HamiInstall(
        schedulers=_named(comps.controllers, HAMI_SCHEDULER_NAMES),
        scheduler_pods=[p for p in _named(comps.pods, HAMI_SCHEDULER_NAMES) if p not in plugin_pods],
        plugins=_named(comps.controllers, HAMI_PLUGIN_NAMES),
        plugin_pods=plugin_pods,
    )


@per_cluster("components")
def vcuda_admission(facts: Facts) -> list[Obj]:
    """tkestack gpu-admission controllers and pods, in whatever namespace."""
    comps = facts.components
    return _named([*comps.controllers, *comps.pods], VCUDA_ADMISSION_NAMES)


def vgpu_asks(pod: Obj, families: Iterable[str]) -> str:
    """``nvidia.com/gpu=1, nvidia.com/gpumem=3000`` for the pod's requests in (or next to) the families."""
    wanted = set(families)
    asks = pod_gpu_requests(pod)
    shown = {r: v for r, v in asks.items() if gpu_family(r) in wanted or ("hami" in wanted and r == "nvidia.com/gpu")}
    return ", ".join(f"{r}={v:g}" for r, v in sorted(shown.items())) or "none"
