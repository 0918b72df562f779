"""Load and validate scenario files.

Hand-written and generated scenarios go through this one loader; a file's ``base:`` chain is
merged first (``bot.sim.scenario_include``). Every problem is reported as
``FILE: where: what`` so a user converting a real cluster's ``kubectl get -o yaml`` output knows
what to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.errors import ScenarioError
from bot.sim import scenario_values as val
from bot.sim.rbac import RbacTable, load_bot_rbac, load_rbac
from bot.sim.scenario_include import flatten_lists, object_problems, raw_objects, read_yaml, resolve_base

SSH_MODES = ("ok", "unreachable", "timeout", "auth-denied", "wrong-host-key")
#: the node's gpubot-node agent pod: "" = follows ``ssh`` (ok, or the exec failure that matches
#: the SSH fault); missing / pending / crashloop = no pod answering; forbidden (exec 403),
#: hang (exec never answers), truncated (the stream closes before the exit status)
AGENT_MODES = ("", "ok", "missing", "pending", "crashloop", "forbidden", "hang", "truncated", "unreachable")
#: the node's gpubot-actuator pod, when the remediation component is installed (``remediation``):
#: "" / ok = Running and Ready; missing / pending / crashloop = none that can act (the action is
#: refused); forbidden (exec 403) | hang (exec never answers)
ACTUATOR_MODES = ("", "ok", "missing", "pending", "crashloop", "forbidden", "hang")
KERNEL_LOG_SOURCES = ("journal", "dmesg", "none")
#: what the node agent's container can read of the kernel log: journalctl (answers as the host's,
#: the simulator's old default), or, as on a real node (no journalctl, /dev/kmsg closed), its own
#: read of the host's mounted journal files | syslog text files | none of them
AGENT_KERNEL_LOGS = ("journalctl", "journal-files", "log-files", "none")
#: where the node agent finds nvidia-smi: its RuntimeClass put it on PATH | a mounted host driver
#: directory (``nodeAgent.hostDriver``, GKE's /home/kubernetes/bin/nvidia) | nowhere
AGENT_DRIVERS = ("runtime", "host", "none")
DRIVER_INSTALLS = ("host", "operator")
_GPU_NUMERIC = ("utilization_gpu", "memory_used_mib", "memory_total_mib", "temperature_c", "power_w")


@dataclass
class GpuFacts:
    """One card as nvidia-smi sees it; a ``None`` value renders as ``[N/A]``."""

    index: int
    uuid: str
    name: str
    utilization_gpu: float | None = 0
    memory_used_mib: float | None = 0
    memory_total_mib: float | None = 0
    temperature_c: float | None = 0
    power_w: float | None = 0
    #: a field name -> raw text to print instead (e.g. "[Not Supported]")
    raw: dict[str, str] = field(default_factory=dict)
    #: PCI bus id as nvidia-smi prints it ("00000000:3B:00.0"); "" = derived from the index
    bus_id: str = ""
    #: "" = reachable; otherwise why the driver cannot reach it ("Unknown Error", "GPU is lost. …"):
    #: nvidia-smi then prints "Unable to determine the device handle for GPU…: <this>"
    lost: str = ""
    #: ECC: uncorrectable errors since the driver loaded (None = the card has no ECC: N/A)
    ecc_volatile_uncorrected: int | None = 0
    #: ECC: uncorrectable errors over the card's life (None = same as volatile)
    ecc_aggregate_uncorrected: int | None = None
    #: a retired page waits for a reset (pre-Ampere cards)
    retired_pages_pending: bool = False
    #: a remapped row waits for a reset (Ampere and newer)
    remapped_rows_pending: bool = False
    remapping_failure: bool = False


@dataclass
class ProcessFacts:
    """One process on a card, as ``nvidia-smi --query-compute-apps`` lists it on a simulated node."""

    pid: int
    name: str
    gpu_uuid: str
    used_memory_mib: float | None = 0


@dataclass
class XidFacts:
    """One ``NVRM: Xid`` line the node's kernel log holds."""

    time: str
    pci: str
    xid: int
    text: str
    pid: str = "<unknown>"
    name: str = ""


@dataclass
class KernelLine:
    """Any other kernel log line (the message after ``kernel:``)."""

    time: str
    text: str


@dataclass
class DevFile:
    """One ``/dev/nvidia*`` device file and its time, as ``ls`` shows it on a simulated node."""

    name: str
    mtime: str


@dataclass
class NodeFacts:
    """What SSH to one node shows."""

    name: str
    address: str = ""
    ssh: str = "ok"
    kubelet: str = "active"
    driver: str = ""
    cuda: str = ""
    driver_install: str = "host"
    gpus: list[GpuFacts] = field(default_factory=list)
    processes: list[ProcessFacts] = field(default_factory=list)
    checkpoint: str | None = None
    dev_nvidia: list[DevFile] = field(default_factory=list)
    #: simulated extra latency per command (benchmarks)
    latency_ms: float = 0.0
    #: the kubelet fails to start again after a stop/restart (fault injection for actions)
    kubelet_fails_start: bool = False
    #: NVRM Xid lines in the kernel log (current boot)
    xid: list[XidFacts] = field(default_factory=list)
    #: other kernel log lines; empty = a few ordinary boot lines
    kernel_log: list[KernelLine] = field(default_factory=list)
    #: where the kernel log can be read: journal | dmesg (no journalctl) | none (neither readable)
    kernel_log_source: str = "journal"
    #: the node agent sees the host's systemd (false: its ``systemctl`` answers no state, as in an
    #: unprivileged container on a real node, and the kubelet's Lease is the evidence)
    agent_systemd: bool = True
    #: the node agent's kernel-log access (``AGENT_KERNEL_LOGS``)
    agent_kernel_log: str = "journalctl"
    #: where the node agent finds nvidia-smi (``AGENT_DRIVERS``)
    agent_driver: str = "runtime"
    #: the node agent's state (``AGENT_MODES``); see ``agent_mode``
    agent: str = ""
    #: the node's actuator pod (``ACTUATOR_MODES``), present only where remediation is installed
    actuator: str = ""

    @property
    def agent_mode(self) -> str:
        """What the agent does: its own mode, else the exec failure that matches the SSH fault."""
        if self.agent:
            return self.agent
        return {"timeout": "hang", "auth-denied": "forbidden", "wrong-host-key": "forbidden"}.get(self.ssh, self.ssh)


@dataclass
class ContainerFacts:
    """What exec into one container shows; key is namespace/pod/container."""

    namespace: str
    pod: str
    container: str
    nvidia_smi: str = "ok"
    dev_nvidia: list[DevFile] = field(default_factory=list)
    pid1: str = "sleep"
    torch: dict[str, Any] | None = None
    env: dict[str, str] = field(default_factory=dict)
    driver: str | None = None


@dataclass
class ApiFault:
    """An injected API fault: requests whose path contains ``match`` get ``status`` or a delay;
    with ``hang`` the server accepts them and never answers (until it stops), as an overloaded
    API server or a proxy holding the request does."""

    match: str = ""
    status: int | None = None
    delay_s: float = 0.0
    times: int | None = None
    rate: float = 1.0
    verb: str | None = None
    hang: bool = False


@dataclass
class Expectation:
    """What a scenario promises for one command: the codes that must and must not appear and the
    root cause that must come first, checked by the scenario tests."""

    run: str
    codes: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    #: the first finding (the root cause) must be one of these; empty = not checked
    first: list[str] = field(default_factory=list)


@dataclass
class Scenario:
    """A simulated cluster: its API objects, what each node and container shows, the API faults to
    inject, and what gpubot must find."""

    name: str
    summary: str
    version: str
    objects: list[dict[str, Any]]
    nodes: dict[str, NodeFacts] = field(default_factory=dict)
    containers: dict[str, ContainerFacts] = field(default_factory=dict)
    api_faults: list[ApiFault] = field(default_factory=list)
    expect: list[Expectation] = field(default_factory=list)
    source: str = "<memory>"
    #: who may read what when a request impersonates a user (``rbac:``); None: not checked
    rbac: RbacTable | None = None
    #: what the bot's own (not impersonated) requests may do (``rbac_bot:``); None: everything
    rbac_bot: RbacTable | None = None
    #: the remediation component is installed: every node section gets a gpubot-actuator pod
    remediation: bool = False


class _Problems:
    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.items.append(f"{self.source}: {where}: {what}")

    def raise_if_any(self) -> None:
        if self.items:
            raise ScenarioError("\n".join(self.items))


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario file (and its ``base:`` chain); raise ScenarioError naming the file and every problem."""
    p = Path(path)
    data = resolve_base(p, read_yaml(p))
    return scenario_from_dict(data, source=str(p))


def scenario_from_dict(data: Any, *, source: str = "<memory>") -> Scenario:
    """Build a Scenario from parsed YAML (also used by the generator)."""
    problems = _Problems(source)
    if not isinstance(data, dict):
        problems.add("top level", "must be a mapping with scenario, kubernetes, nodes")
        problems.raise_if_any()
    for key in ("base", "remove"):
        if key in data:
            problems.add(key, "only a scenario file can have a base (load it with load_scenario)")
    name = data.get("scenario")
    if not isinstance(name, str) or not name:
        problems.add("scenario", "missing or not a string")
    kube = data.get("kubernetes")
    objects: list[dict[str, Any]] = []
    version = "v1.28.0"
    if not isinstance(kube, dict):
        problems.add("kubernetes", "missing or not a mapping")
    else:
        version = str(kube.get("version") or version)
        listed = raw_objects(kube)
        if not isinstance(listed, list):
            problems.add("kubernetes.objects", "missing or not a list")
        else:
            objects = flatten_lists(listed)
            for i, obj in enumerate(objects):
                _check_object(obj, f"kubernetes.objects[{i}]", problems)
    nodes = _load_nodes(data.get("nodes") or {}, problems)
    containers = _load_containers(data.get("containers") or {}, problems)
    faults = _load_faults(val.mapping(data.get("api"), "api", problems.add).get("faults") or [], problems)
    expect = _load_expect(data.get("expect") or [], problems)
    rbac = load_rbac(data.get("rbac"), problems.add)
    rbac_bot = load_bot_rbac(data.get("rbac_bot"), problems.add)
    remediation = data.get("remediation", False)
    if not isinstance(remediation, bool):
        problems.add("remediation", "must be true or false")
    problems.raise_if_any()
    return Scenario(
        name=str(name),
        summary=str(data.get("summary") or ""),
        version=version,
        objects=objects,
        nodes=nodes,
        containers=containers,
        api_faults=faults,
        expect=expect,
        source=source,
        rbac=rbac,
        rbac_bot=rbac_bot,
        remediation=remediation is True,
    )


def _check_object(obj: Any, where: str, problems: _Problems) -> None:
    for what in object_problems(obj):
        problems.add(where, what)


def _num(value: Any, where: str, problems: _Problems) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.add(where, f"must be a number or null, got {value!r}")
        return None
    return value


def _devs(raw: Any, where: str, problems: _Problems) -> list[DevFile]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(where, "must be a list of {name, mtime}")
        return []
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "name" not in item:
            problems.add(f"{where}[{i}]", "must have name and mtime")
            continue
        out.append(DevFile(name=str(item["name"]), mtime=str(item.get("mtime", "2026-01-01T00:00:00Z"))))
    return out


def _load_nodes(raw: Any, problems: _Problems) -> dict[str, NodeFacts]:
    if not isinstance(raw, dict):
        problems.add("nodes", "must be a mapping of node name -> facts")
        return {}
    nodes: dict[str, NodeFacts] = {}
    for name, facts in raw.items():
        where = f"nodes.{name}"
        if not isinstance(facts, dict):
            problems.add(where, "must be a mapping")
            continue
        ssh = str(facts.get("ssh", "ok"))
        if ssh not in SSH_MODES:
            problems.add(f"{where}.ssh", f"unknown mode {ssh!r}; use one of {', '.join(SSH_MODES)}")
        source = str(facts.get("kernel_log_source", "journal"))
        if source not in KERNEL_LOG_SOURCES:
            problems.add(f"{where}.kernel_log_source", f"use one of {', '.join(KERNEL_LOG_SOURCES)}")
        agent = str(facts.get("agent", "") or "")
        if agent not in AGENT_MODES:
            problems.add(f"{where}.agent", f"unknown mode {agent!r}; use one of {', '.join(AGENT_MODES[1:])}")
        actuator = str(facts.get("actuator", "") or "")
        if actuator not in ACTUATOR_MODES:
            problems.add(f"{where}.actuator", f"unknown mode {actuator!r}; use one of {', '.join(ACTUATOR_MODES[1:])}")
        for key, allowed, default in (("agent_kernel_log", AGENT_KERNEL_LOGS, "journalctl"),
                                      ("agent_driver", AGENT_DRIVERS, "runtime")):
            if str(facts.get(key, default)) not in allowed:
                problems.add(f"{where}.{key}", f"use one of {', '.join(allowed)}")
        install = str(facts.get("driver_install", "host"))
        if install not in DRIVER_INSTALLS:
            problems.add(f"{where}.driver_install", f"use one of {', '.join(DRIVER_INSTALLS)}")
        gpus = []
        for i, g in enumerate(_items(facts.get("gpus"), f"{where}.gpus", problems)):
            gw = f"{where}.gpus[{i}]"
            if not isinstance(g, dict) or "uuid" not in g:
                problems.add(gw, "must be a mapping with at least index and uuid")
                continue
            values: dict[str, Any] = {k: _num(g.get(k, 0), f"{gw}.{k}", problems) for k in _GPU_NUMERIC}
            values.update(_gpu_health(g, gw, problems))
            gpus.append(
                GpuFacts(
                    index=val.whole(g.get("index", i), f"{gw}.index", problems.add, i),
                    uuid=str(g["uuid"]),
                    name=str(g.get("name", "NVIDIA GPU")),
                    raw=val.text_map(g.get("raw"), f"{gw}.raw", problems.add),
                    **values,
                )
            )
        procs = []
        for i, p in enumerate(_items(facts.get("processes"), f"{where}.processes", problems)):
            pw = f"{where}.processes[{i}]"
            if not isinstance(p, dict) or "pid" not in p:
                problems.add(pw, "must be a mapping with pid, name, gpu_uuid, used_memory_mib")
                continue
            procs.append(
                ProcessFacts(
                    pid=val.whole(p["pid"], f"{pw}.pid", problems.add, 0),
                    name=str(p.get("name", "")),
                    gpu_uuid=str(p.get("gpu_uuid", "")),
                    used_memory_mib=_num(p.get("used_memory_mib", 0), f"{pw}.used_memory_mib", problems),
                )
            )
        checkpoint = facts.get("checkpoint")
        if checkpoint is not None and not isinstance(checkpoint, str):
            problems.add(f"{where}.checkpoint", "must be the file's text (a string)")
            checkpoint = None
        nodes[str(name)] = NodeFacts(
            name=str(name),
            address=str(facts.get("address", "")),
            ssh=ssh,
            kubelet=str(facts.get("kubelet", "active")),
            driver=str(facts.get("driver", "")),
            cuda=str(facts.get("cuda", "")),
            driver_install=install,
            gpus=gpus,
            processes=procs,
            checkpoint=checkpoint,
            dev_nvidia=_devs(facts.get("dev_nvidia"), f"{where}.dev_nvidia", problems),
            latency_ms=val.number(facts.get("latency_ms", 0), f"{where}.latency_ms", problems.add, 0.0),
            kubelet_fails_start=val.flag(
                facts.get("kubelet_fails_start", False), f"{where}.kubelet_fails_start", problems.add, False
            ),
            xid=_xids(facts.get("xid"), f"{where}.xid", problems),
            kernel_log=_kernel_lines(facts.get("kernel_log"), f"{where}.kernel_log", problems),
            kernel_log_source=source,
            agent_systemd=facts.get("agent_systemd", True) is not False,
            agent_kernel_log=str(facts.get("agent_kernel_log", "journalctl")),
            agent_driver=str(facts.get("agent_driver", "runtime")),
            agent=agent,
            actuator=actuator,
        )
    return nodes


def _items(raw: Any, where: str, problems: _Problems) -> list[Any]:
    """A list field of a node (``gpus``, ``processes``); anything else is a problem."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(where, "must be a list")
        return []
    return raw


def _gpu_health(g: dict[str, Any], where: str, problems: _Problems) -> dict[str, Any]:
    """The health fields of one card (``lost``, ECC counters, pending retirement/remapping)."""
    lost = g.get("lost", False)
    if lost is True:
        lost_text = "Unknown Error"
    elif lost in (False, None):
        lost_text = ""
    elif isinstance(lost, str):
        lost_text = lost
    else:
        problems.add(f"{where}.lost", "must be true, false or the error text nvidia-smi prints")
        lost_text = ""
    out: dict[str, Any] = {"bus_id": str(g.get("bus_id") or ""), "lost": lost_text}
    for key in ("ecc_volatile_uncorrected", "ecc_aggregate_uncorrected"):
        value = g.get(key, 0 if key == "ecc_volatile_uncorrected" else None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.add(f"{where}.{key}", f"must be a count (0 or more) or null, got {value!r}")
            value = 0
        out[key] = value
    for key in ("retired_pages_pending", "remapped_rows_pending", "remapping_failure"):
        value = g.get(key, False)
        if not isinstance(value, bool):
            problems.add(f"{where}.{key}", f"must be true or false, got {value!r}")
            value = False
        out[key] = value
    return out


def _xids(raw: Any, where: str, problems: _Problems) -> list[XidFacts]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(where, "must be a list of {time, pci, xid, pid?, name?, text}")
        return []
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not {"time", "pci", "xid"} <= set(item):
            problems.add(f"{where}[{i}]", "must have time, pci and xid (and usually text)")
            continue
        try:
            code = int(item["xid"])
        except (TypeError, ValueError):
            problems.add(f"{where}[{i}].xid", f"must be a number, got {item['xid']!r}")
            continue
        out.append(
            XidFacts(
                time=str(item["time"]),
                pci=str(item["pci"]),
                xid=code,
                text=str(item.get("text", "")),
                pid=str(item.get("pid", "<unknown>")),
                name=str(item.get("name", "")),
            )
        )
    return out


def _kernel_lines(raw: Any, where: str, problems: _Problems) -> list[KernelLine]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.add(where, "must be a list of {time, text}")
        return []
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "text" not in item:
            problems.add(f"{where}[{i}]", "must have time and text")
            continue
        out.append(KernelLine(time=str(item.get("time", "")), text=str(item["text"])))
    return out


def _load_containers(raw: Any, problems: _Problems) -> dict[str, ContainerFacts]:
    if not isinstance(raw, dict):
        problems.add("containers", "must be a mapping of namespace/pod/container -> facts")
        return {}
    out: dict[str, ContainerFacts] = {}
    for key, facts in raw.items():
        where = f"containers.{key}"
        parts = str(key).split("/")
        if len(parts) != 3 or not all(parts):
            problems.add(where, "key must be namespace/pod/container")
            continue
        if not isinstance(facts, dict):
            problems.add(where, "must be a mapping")
            continue
        torch = facts.get("torch")
        if torch is not None and not isinstance(torch, dict):
            problems.add(f"{where}.torch", "must be a mapping (version, cuda, available, device_count)")
            torch = None
        out[str(key)] = ContainerFacts(
            namespace=parts[0],
            pod=parts[1],
            container=parts[2],
            nvidia_smi=str(facts.get("nvidia_smi", "ok")),
            dev_nvidia=_devs(facts.get("dev_nvidia"), f"{where}.dev_nvidia", problems),
            pid1=str(facts.get("pid1", "sleep")),
            torch=torch,
            env=val.text_map(facts.get("env"), f"{where}.env", problems.add),
            driver=str(facts["driver"]) if facts.get("driver") else None,
        )
    return out


def _load_faults(raw: Any, problems: _Problems) -> list[ApiFault]:
    if not isinstance(raw, list):
        problems.add("api.faults", "must be a list")
        return []
    out = []
    for i, f in enumerate(raw):
        where = f"api.faults[{i}]"
        if not isinstance(f, dict):
            problems.add(where, "must be a mapping (match, verb, status, delay_s, hang, times, rate)")
            continue
        rate = val.number(f.get("rate", 1.0), f"{where}.rate", problems.add, 1.0)
        if not 0.0 <= rate <= 1.0:
            problems.add(f"{where}.rate", "must be between 0 and 1")
        status, times = f.get("status"), f.get("times")
        out.append(
            ApiFault(
                match=str(f.get("match", "")),
                status=val.whole(status, f"{where}.status", problems.add, 500) if status is not None else None,
                delay_s=val.number(f.get("delay_s", 0.0), f"{where}.delay_s", problems.add, 0.0),
                times=val.whole(times, f"{where}.times", problems.add, 1) if times is not None else None,
                rate=rate,
                verb=str(f["verb"]).upper() if f.get("verb") else None,
                hang=bool(f.get("hang", False)),
            )
        )
    return out


def _load_expect(raw: Any, problems: _Problems) -> list[Expectation]:
    if not isinstance(raw, list):
        problems.add("expect", "must be a list of {run, codes, absent}")
        return []
    out = []
    for i, e in enumerate(raw):
        if not isinstance(e, dict) or not isinstance(e.get("run"), str):
            problems.add(f"expect[{i}]", "must have a run string")
            continue
        out.append(
            Expectation(
                run=e["run"],
                codes=val.texts(e.get("codes"), f"expect[{i}].codes", problems.add),
                absent=val.texts(e.get("absent"), f"expect[{i}].absent", problems.add),
                first=val.texts(e.get("first"), f"expect[{i}].first", problems.add),
            )
        )
    return out
