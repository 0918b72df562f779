"""One typed, frozen settings object, loaded once from the environment and an optional YAML file.

Nothing else in gpubot reads ``os.environ``. Secrets are wrapped in ``Secret`` so that they never
show in ``repr``, logs, exceptions or Slack messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

from bot.errors import ConfigError, UsageError
from bot.identity import Identity, parse_identity_map
from bot.names import printable
from bot.settings.state_path import default_state_path
from bot.settings.values import (
    QuietHours,
    as_text,
    as_text_list,
    as_text_map,
    coerce,
    describe,
    read_yaml_file,
    route_selector,
)
from bot.yamlio.marks import YamlInputError, load_yaml

ENV_PREFIX = "GPUBOT_"

#: how the bot talks to Slack (the values ``slack_mode`` accepts; the Helm chart's schema reads them)
SlackMode = Literal["socket", "http"]
#: how node reads reach a GPU node: exec into the gpubot-node agent pod, or SSH
NodeAccess = Literal["auto", "agent", "ssh"]
EventLoop = Literal["auto", "uvloop", "asyncio"]
#: where pending actions, the audit trail and retry keys live: one SQLite file (one replica; the
#: CLI and the demo) or objects on the Kubernetes API (several replicas; the Helm chart's default)
StateBackend = Literal["sqlite", "kubernetes"]
#: the log levels ``log_level`` accepts (any case; stored upper case)
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


class Secret:
    """A secret string; its repr and str never reveal the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster."""

    #: name users type after ``--cluster``
    name: str
    #: kubeconfig file; empty = default loading rules (KUBECONFIG, ~/.kube/config)
    kubeconfig: str = ""
    #: context inside the kubeconfig; empty = current context
    context: str = ""
    #: use the pod's service account instead of a kubeconfig
    in_cluster: bool = False
    #: node name -> "host:port" for SSH, overriding the node's InternalIP:22 (the simulator uses it)
    ssh_targets: Mapping[str, str] = field(default_factory=dict)
    #: known_hosts file for this cluster's nodes; empty = the global ``ssh_known_hosts``
    ssh_known_hosts: str = ""
    #: private key for this cluster's nodes; empty = the global ``ssh_key_path``
    ssh_key_path: str = ""


#: finding codes the watch posts by default: leaks, zombie checkpoints, lost or unhealthy GPUs,
#: a device plugin or GPU operator that is not running
DEFAULT_WATCH_CODES: tuple[str, ...] = (
    "LEAK_LOGICAL_NOT_PHYSICAL",
    "CHECKPOINT_ZOMBIE",
    "GPU_LOST",
    "GPU_UNHEALTHY",
    "DEVICE_PLUGIN_NOT_RUNNING",
    "GPU_OPERATOR_NOT_READY",
    "NODE_NOT_READY",
)


@dataclass(frozen=True)
class WatchRoute:
    """Problems in namespaces matching ``namespace_selector`` go to ``channel``."""

    #: equality-based label selector on the namespace: ``k=v``, ``k!=v``, ``k``, ``!k``, comma-separated
    namespace_selector: str
    #: Slack channel id for those problems
    channel: str


@dataclass(frozen=True)
class WatchConfig:
    """One proactive watch: sweep ``cluster``'s GPU nodes and post what is wrong to ``channel``."""

    #: cluster name (one of ``clusters``)
    cluster: str
    #: Slack channel id the problems are posted to
    channel: str
    #: off until turned on: a watch entry alone posts nothing
    enabled: bool = False
    #: seconds between sweeps (node-status over the cluster's GPU nodes)
    interval_s: float = 600.0
    #: finding codes that are posted; every other finding of the sweep is ignored
    codes: tuple[str, ...] = DEFAULT_WATCH_CODES
    #: seconds a GPU pod (or a GPU workload's oldest pod) may stay Pending before why-pending runs
    #: on it and the cause is posted; resolved in place once it schedules
    pending_after_s: float = 300.0
    #: seconds between checks for GPU pods Pending longer than ``pending_after_s``
    pending_check_s: float = 30.0
    #: at most this many waiting workloads are diagnosed per check (the longest waiting first)
    pending_max_diagnoses: int = 20
    #: react to the watch-fed cache: a GPU node turning NotReady, its allocatable GPUs dropping
    #: below capacity, or its device-plugin pod starting to crash-loop runs node-status on it
    stream: bool = True
    #: seconds between looks at the watch-fed cache for such changes
    stream_poll_s: float = 2.0
    #: seconds the changes of a burst are collected before one node-status runs over all of them
    stream_debounce_s: float = 3.0
    #: daily quiet hours, "HH:MM-HH:MM" (may span midnight): new posts that are not critical wait
    #: until they end (and are posted then if still found); critical ones post; empty = none
    quiet_hours: str = ""
    #: IANA time zone of ``quiet_hours`` (e.g. Europe/Berlin)
    quiet_hours_timezone: str = "UTC"
    #: per-namespace channels, first match wins; problems in no matching namespace (and node
    #: problems) go to ``channel``
    routes: tuple[WatchRoute, ...] = ()
    #: namespace annotation naming the owning team: a Slack user id (U…), user-group id (S…) or
    #: @handle, shown as a mention on the namespace's problems; other values are ignored
    owner_annotation: str = "gpubot.dev/owner"


@dataclass(frozen=True)
class Settings:
    """Every setting gpubot has; each field says what it is for."""

    #: Slack bot token (xoxb-…); needed by ``serve``
    slack_bot_token: Secret = field(default_factory=lambda: Secret(""))
    #: Slack app-level token (xapp-…); needed for Socket Mode
    slack_app_token: Secret = field(default_factory=lambda: Secret(""))
    #: Slack signing secret; needed for HTTP mode
    slack_signing_secret: Secret = field(default_factory=lambda: Secret(""))
    #: "socket" (default: no inbound URL needed) or "http"
    slack_mode: SlackMode = "socket"
    #: Web API base URL; only tests point it elsewhere
    slack_api_url: str = "https://slack.com/api/"
    #: port of the HTTP server (Slack events in HTTP mode, health and metrics in both)
    http_port: int = 8080
    #: address the HTTP server binds
    http_host: str = "0.0.0.0"
    #: clusters by name; the first is the default
    clusters: tuple[ClusterConfig, ...] = (ClusterConfig(name="default"),)
    #: Slack channel id -> default cluster name for commands typed there
    channel_clusters: Mapping[str, str] = field(default_factory=dict)
    #: Slack channel ids where answers go only to the asker unless they type ``--public``
    #: (``*``: everywhere); elsewhere an answer is private only with ``--private``
    private_channels: tuple[str, ...] = ()
    #: how node reads reach GPU nodes: "agent" (exec into the gpubot-node DaemonSet pod on the
    #: node, in ``namespace``), "ssh" (the settings below), or "auto": the agent when its pods
    #: exist in ``namespace``, else SSH when a key is set, else no node reads (said in one line)
    node_access: NodeAccess = "auto"
    #: the event loop ``gpubot serve`` runs on: "uvloop" (C, less CPU per Slack ack and per node read:
    #: bot/event_loop.py), "asyncio" (Python's own), or "auto": uvloop where it is installed
    event_loop: EventLoop = "auto"
    #: the namespace gpubot and its node agents run in
    namespace: str = "gpubot"
    #: beside the node reads, GET /metrics of the dcgm-exporter pod on each read node (GPU Operator's
    #: nvidia-dcgm-exporter, port "metrics"/9400, at its pod IP): cards, holding pods and the last Xid
    #: (which stands in for a kernel log the node read could not read); false: never asked
    dcgm_exporter: bool = True
    #: SSH user for node probes
    ssh_user: str = "root"
    #: SSH private key file
    ssh_key_path: str = ""
    #: known_hosts file; host keys are always checked strictly
    ssh_known_hosts: str = ""
    #: at most this many nodes are read at once (SSH or agent); a node still silent after its fair
    #: share of the command's deadline lets the next one start and goes on until its own deadline
    #: (``bot.probes.node.fair_hold``), so hung nodes cannot keep healthy ones from being read
    ssh_concurrency: int = 16
    #: seconds one node may take for all its commands before it is reported unreachable
    ssh_deadline_s: float = 10.0
    #: seconds one diagnosis may take in all; what is not read by then is reported as skipped
    command_deadline_s: float = 20.0
    #: ``serve`` runs at most this many diagnoses at once; the rest wait in order of arrival (their
    #: ack and "queued" message go out at once, and ``command_deadline_s`` counts from when one
    #: starts), so a burst of commands cannot stall the bot's event loop and delay every ack
    max_concurrent_diagnoses: int = 4
    #: the long-running bot keeps a node's SSH connection this many seconds after its last use
    ssh_idle_s: float = 120.0
    #: seconds one Kubernetes API request may take
    api_timeout_s: float = 10.0
    #: page size for list calls (lists are never unbounded)
    page_size: int = 500
    #: directory of runbook overrides layered on the packaged runbooks: a file there replaces the
    #: packaged file of the same name, any other file adds a runbook; empty = the packaged ones only
    runbook_dir: str = ""
    #: where pending actions, the audit trail and Slack retry keys live: "sqlite" (the file at
    #: ``state_path``; one replica) or "kubernetes" (gpubot.dev objects and Leases in ``namespace``
    #: of the default cluster, with leader election, so several replicas can run)
    state: StateBackend = "sqlite"
    #: SQLite file for pending actions and the audit trail (``state: sqlite``; with "kubernetes"
    #: only the proactive watch's memory stays in it); default ``$XDG_STATE_HOME/gpubot/state.db``
    state_path: str = field(default_factory=default_state_path)
    #: seconds the leader's Lease (``gpubot-leader``) is valid without renewal (``state:
    #: kubernetes``); it renews every third of it, and a replica takes over after it runs out
    leader_lease_s: float = 15.0
    #: seconds an offered remediation stays clickable
    action_ttl_s: int = 900
    #: action name (or "*" for all) -> Slack user ids / user-group ids allowed to approve it
    approvers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: seconds between sweeps of the running bot that expire offers nobody clicked and mark their
    #: buttons "expired" in place (so a stale button never sits there looking clickable)
    offer_sweep_interval_s: float = 60.0
    #: the requester of an action may not approve it: their click counts as the first approval
    #: and another approver must second it
    two_person_rule: bool = False
    #: per-user authority (opt-in): Slack user id (U…) or user-group id (S…) -> the Kubernetes
    #: ``{user, groups}`` that person's diagnoses read as (impersonation; the bot's service account
    #: then needs the ``impersonation`` component). A user's own entry wins over their groups'.
    #: When set, people matched by no entry get no diagnosis. Empty: everybody reads as the bot.
    identity_map: Mapping[str, Identity] = field(default_factory=dict)
    #: Slack channel id where approval requests go (a click by someone who may not approve asks
    #: the approvers there); empty = a reply in the thread of the report that offered the fix
    approval_channel: str = ""
    #: every action reports what it would do and changes nothing
    dry_run: bool = False
    #: serve reads from a watch-fed cache in the long-running bot
    cache_enabled: bool = True
    #: seconds without a watch event after which cached reads fall back to the API
    cache_staleness_s: float = 120.0
    #: seconds to wait for a node to become Ready after a kubelet restart
    node_ready_timeout_s: float = 120.0
    #: log level name
    log_level: LogLevel = "INFO"
    #: a check that raises, or yields a code it did not declare, fails the command instead of being
    #: logged and skipped (the test suite turns this on; production keeps the partial report)
    strict_checks: bool = False
    #: seconds ``serve`` waits for in-flight diagnoses after SIGTERM before cancelling them; a
    #: running remediation is waited for up to its own maximum (its Ready wait and restore included)
    shutdown_grace_s: float = 25.0
    #: proactive watches (``serve`` only): per cluster and channel, a periodic sweep that posts
    #: problems once and edits them in place; none by default, and an entry is off until enabled
    watch: tuple[WatchConfig, ...] = ()
    #: at most this many new watch posts per channel in any hour (all the channel's watches
    #: together); the problems beyond it wait, listed in one summary message edited in place
    watch_channel_posts_per_hour: int = 20
    #: token Alertmanager sends to ``POST /alerts`` (``Authorization: Bearer TOKEN``, or basic auth
    #: with TOKEN as the password); empty = the receiver is off
    alerts_token: Secret = field(default_factory=lambda: Secret(""))
    #: Slack channel id the alert groups are posted to
    alerts_channel: str = ""
    #: cluster whose nodes and pods the alerts name (empty = the default cluster)
    alerts_cluster: str = ""
    #: seconds a running remediation may go without its process renewing it before another
    #: process (a replica, or this one after a restart) takes it over and restores the node
    action_lease_s: float = 30.0

    def cluster(self, name: str | None) -> ClusterConfig:
        """The cluster called ``name``, or the default one."""
        if not name:
            return self.clusters[0]
        for c in self.clusters:
            if c.name == name:
                return c
        known = ", ".join(c.name for c in self.clusters)
        raise ConfigError(f"unknown cluster {name!r}; configured: {known}")


_SECRET_FIELDS = {"slack_bot_token", "slack_app_token", "slack_signing_secret", "alerts_token"}


def _coerce(name: str, value: Any, default: Any, *, text_ok: bool = True) -> Any:
    """One field's value, strictly (``bot.settings.values``); ``name`` is how errors call it."""
    field_name = name.rsplit(".", 1)[-1]
    if field_name in _SECRET_FIELDS:
        return value if isinstance(value, Secret) else Secret(as_text(name, value).strip())
    if field_name == "log_level":
        return as_text(name, value).strip().upper()
    return coerce(name, value, default, text_ok=text_ok)


def _clusters(raw: Any, *, text_ok: bool = False) -> tuple[ClusterConfig, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError("setting clusters: expected a non-empty list of {name, kubeconfig, context}")
    out = []
    defaults = {f.name: f.default for f in fields(ClusterConfig)}
    for n, item in enumerate(raw):
        if not isinstance(item, dict) or not item.get("name"):
            raise ConfigError(f"setting clusters[{n}]: expected a mapping with a name")
        name = as_text(f"clusters[{n}].name", item["name"])
        unknown = set(item) - set(defaults)
        if unknown:
            raise ConfigError(f"setting clusters[{name}]: unknown keys {sorted(map(str, unknown))}")
        values: dict[str, Any] = {}
        for key, value in item.items():
            where = f"clusters[{name}].{key}"
            if key == "ssh_targets":
                values[key] = as_text_map(where, value, what="node name -> host:port")
            else:
                values[key] = coerce(where, value, defaults[key], text_ok=text_ok)
        out.append(ClusterConfig(**values))
    return tuple(out)


def _routes(raw: Any, n: int) -> tuple[WatchRoute, ...]:
    keys = {"namespace_selector", "channel"}
    if not isinstance(raw, list | tuple) or not all(isinstance(r, dict) and set(r) == keys for r in raw):
        raise ConfigError(f"setting watch[{n}].routes: expected a list of {{namespace_selector, channel}}")
    return tuple(WatchRoute(str(r["namespace_selector"]), str(r["channel"])) for r in raw)


def _watches(raw: Any, *, text_ok: bool = False) -> tuple[WatchConfig, ...]:
    if isinstance(raw, tuple) and all(isinstance(w, WatchConfig) for w in raw):
        return raw
    if not isinstance(raw, list):
        raise ConfigError("setting watch: expected a list of {cluster, channel, enabled, interval_s, codes}")
    out = []
    allowed = {f.name for f in fields(WatchConfig)}
    for n, item in enumerate(raw):
        if not isinstance(item, dict) or not item.get("cluster") or not item.get("channel"):
            raise ConfigError(f"setting watch[{n}]: every entry needs a cluster and a channel")
        unknown = set(item) - allowed
        if unknown:
            raise ConfigError(f"setting watch[{n}]: unknown keys {sorted(unknown)}")
        values: dict[str, Any] = {"cluster": str(item["cluster"]), "channel": str(item["channel"])}
        for f in fields(WatchConfig):
            if f.name in item and f.name not in values and f.name not in ("codes", "routes"):
                values[f.name] = _coerce(f"watch[{n}].{f.name}", item[f.name], f.default, text_ok=text_ok)
        if "codes" in item:
            codes = item["codes"]
            if not isinstance(codes, list | tuple) or not codes or not all(isinstance(c, str) for c in codes):
                raise ConfigError(f"setting watch[{n}].codes: expected a non-empty list of finding codes")
            values["codes"] = tuple(codes)
        if "routes" in item:
            values["routes"] = _routes(item["routes"], n)
        out.append(WatchConfig(**values))
    return tuple(out)


def with_node_access(settings: Settings, given: str | None) -> Settings:
    """``settings`` with the ``--node-access`` option applied (None or "": unchanged)."""
    if not given:
        return settings
    if given not in get_args(NodeAccess):
        raise UsageError(f"--node-access {printable(given)}: use {', '.join(get_args(NodeAccess))}")
    return replace(settings, node_access=given)  # type: ignore[arg-type]


def load_settings(
    *, env: Mapping[str, str] | None = None, config_file: str | None = None, **overrides: Any
) -> Settings:
    """Build settings from (lowest first) defaults, a YAML file, the environment, then overrides.

    ``GPUBOT_CONFIG`` names the YAML file. ``GPUBOT_<FIELD>`` sets a field;
    ``GPUBOT_<SECRET>_FILE`` reads a secret from a mounted file.
    """
    env = dict(os.environ if env is None else env)
    values: dict[str, Any] = {}
    #: where each value came from, for the error message; file values must have their YAML type
    origin: dict[str, str] = {}
    path = config_file or env.get(ENV_PREFIX + "CONFIG")
    if path:
        loaded = _read_config_file(path)
        values.update(loaded)
        origin.update({str(k): f"config file {path}" for k in loaded})
    defaults = Settings()
    known = {f.name: getattr(defaults, f.name) for f in fields(Settings)}
    for fname in known:
        key = ENV_PREFIX + fname.upper()
        if key in env:
            values[fname], origin[fname] = env[key], f"environment variable {key}"
        if fname in _SECRET_FIELDS and key + "_FILE" in env:
            try:
                values[fname] = Path(env[key + "_FILE"]).read_text(encoding="utf-8").strip()
            except OSError:
                raise ConfigError(f"{key}_FILE: cannot read the file it names") from None
            origin[fname] = f"environment variable {key}_FILE"
    values.update(overrides)
    for fname in overrides:
        origin[fname] = "override"
    if "state_path" not in values:
        values["state_path"] = default_state_path(env)  # the environment given, not this process's
    unknown = sorted(set(values) - set(known), key=str)
    if unknown:
        where = origin.get(str(unknown[0]), "settings")
        raise ConfigError(f"{where}: unknown settings: {', '.join(map(str, unknown))}")
    result: dict[str, Any] = {}
    for fname, value in values.items():
        from_file = origin.get(fname, "").startswith("config file")
        try:
            result[fname] = _field(fname, value, known[fname], from_file=from_file)
        except ConfigError as exc:
            raise ConfigError(f"{origin[fname]}: {exc.user_message}") from None
    settings = replace(defaults, **result)
    try:
        _check(settings)
    except ConfigError as exc:
        named = re.match(r"setting (\w+)", exc.user_message)
        # the file or variable that set the key; a key that is missing is the settings file's
        where = origin.get(named.group(1), "") if named else ""
        where = where or (f"config file {path}" if path else "")
        raise ConfigError(f"{where}: {exc.user_message}" if where else exc.user_message) from None
    return settings


def _read_config_file(path: str) -> dict[str, Any]:
    """The settings file as a mapping; errors name the file (and the line, for bad YAML)."""
    loaded = read_yaml_file(path, f"config file {path}")
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path}: expected a mapping of settings, got {describe(loaded)}")
    return loaded


def _field(fname: str, value: Any, default: Any, *, from_file: bool) -> Any:
    """One top-level setting as its type; ``from_file``: YAML types only, no text spellings."""
    text_ok = not from_file
    if fname == "clusters":
        return value if isinstance(value, tuple) else _clusters(value, text_ok=text_ok)
    if fname == "watch":
        return _watches(value, text_ok=text_ok)
    if fname == "approvers":
        if not isinstance(value, Mapping):
            raise ConfigError(f"setting approvers: expected a mapping of action -> list of ids, got {describe(value)}")
        # a single id written without brackets is refused, never split into characters
        return {str(k): as_text_list(f"approvers[{k}]", v, what="Slack user/group ids") for k, v in value.items()}
    if fname == "identity_map":
        if isinstance(value, str):  # from the environment: JSON (or YAML) text
            try:
                value = load_yaml(value) if value.strip() else {}
            except YamlInputError as exc:
                raise ConfigError(f"setting identity_map: not valid JSON/YAML: {exc}") from None
        return parse_identity_map(value)
    if fname == "private_channels":
        if isinstance(value, str):  # comma-separated, as the environment gives it
            return tuple(x.strip() for x in value.split(",") if x.strip())
        return as_text_list("private_channels", value, what="channel ids")
    if fname == "channel_clusters":
        return as_text_map("channel_clusters", value, what="channel -> cluster")
    return _coerce(fname, value, default, text_ok=text_ok)


def _check(s: Settings) -> None:
    if s.slack_mode not in get_args(SlackMode):
        raise ConfigError(f"setting slack_mode: {s.slack_mode!r} is not 'socket' or 'http'")
    if s.state not in get_args(StateBackend):
        raise ConfigError(f"setting state: {s.state!r} is not 'sqlite' or 'kubernetes'")
    if s.leader_lease_s < 2:
        raise ConfigError("setting leader_lease_s: must be at least 2 seconds")
    if s.event_loop not in get_args(EventLoop):
        raise ConfigError(f"setting event_loop: {s.event_loop!r} is not 'auto', 'uvloop' or 'asyncio'")
    if s.node_access not in get_args(NodeAccess):
        raise ConfigError(f"setting node_access: {s.node_access!r} is not 'auto', 'agent' or 'ssh'")
    if s.log_level not in get_args(LogLevel):
        raise ConfigError(f"setting log_level: expected one of {', '.join(get_args(LogLevel))}")
    if s.ssh_concurrency < 1:
        raise ConfigError("setting ssh_concurrency: must be at least 1")
    if s.max_concurrent_diagnoses < 1:
        raise ConfigError("setting max_concurrent_diagnoses: must be at least 1")
    for name in ("ssh_deadline_s", "api_timeout_s", "command_deadline_s"):
        if getattr(s, name) <= 0:
            raise ConfigError(f"setting {name}: must be positive")
    if s.offer_sweep_interval_s <= 0:
        raise ConfigError("setting offer_sweep_interval_s: must be positive")
    if s.action_lease_s < 1:
        raise ConfigError("setting action_lease_s: must be at least 1 second")
    if not 1 <= s.page_size <= 10000:
        raise ConfigError("setting page_size: must be between 1 and 10000")
    names = [c.name for c in s.clusters]
    if len(set(names)) != len(names):
        raise ConfigError("setting clusters: duplicate cluster names")
    for channel, cluster in s.channel_clusters.items():
        if cluster not in names:
            raise ConfigError(f"setting channel_clusters[{channel}]: unknown cluster {cluster!r}")
    if s.alerts_token and not s.alerts_channel:
        raise ConfigError("setting alerts_channel: needed when alerts_token turns the alert receiver on")
    if s.alerts_cluster and s.alerts_cluster not in names:
        raise ConfigError(f"setting alerts_cluster: unknown cluster {s.alerts_cluster!r}")
    if s.watch_channel_posts_per_hour < 1:
        raise ConfigError("setting watch_channel_posts_per_hour: must be at least 1")
    seen: set[tuple[str, str]] = set()
    for w in s.watch:
        if w.cluster not in names:
            raise ConfigError(f"setting watch: unknown cluster {w.cluster!r}")
        for name in ("interval_s", "pending_check_s", "pending_max_diagnoses", "stream_poll_s"):
            if getattr(w, name) <= 0:
                raise ConfigError(f"setting watch[{w.cluster}].{name}: must be positive")
        try:
            QuietHours.parse(w.quiet_hours, w.quiet_hours_timezone)  # raises on a bad span or zone
        except ConfigError as exc:
            raise ConfigError(f"setting watch[{w.cluster}].{exc.user_message}") from None
        for name in ("pending_after_s", "stream_debounce_s"):
            if getattr(w, name) < 0:
                raise ConfigError(f"setting watch[{w.cluster}].{name}: must not be negative")
        for route in w.routes:
            route_selector(route.namespace_selector)  # raises on a selector it cannot read
            if not route.channel:
                raise ConfigError(f"setting watch[{w.cluster}].routes: every route needs a channel")
        # one problem, one message: two watches of a cluster must not share a channel
        for channel in {w.channel, *(r.channel for r in w.routes)}:
            if (w.cluster, channel) in seen:
                raise ConfigError(f"setting watch: cluster {w.cluster!r} and channel {channel} given twice")
            seen.add((w.cluster, channel))
