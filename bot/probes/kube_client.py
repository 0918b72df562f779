"""Build official ``kubernetes`` API clients for a configured cluster.

This module only creates clients; it performs no request. Both the read facade (``kube.py``)
and the actions package get their ``ApiClient`` here so that TLS, tokens, contexts and (for
per-user authority) impersonation are set up in exactly one place.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.config import kube_config
from kubernetes.config.config_exception import ConfigException
from urllib3 import HTTPHeaderDict

from bot.errors import ConfigError
from bot.identity import Identity
from bot.names import printable
from bot.probes.kube import READ_THREADS
from bot.probes.kubeconfig_problems import explain
from bot.settings import ClusterConfig
from bot.settings.values import describe, read_yaml_file

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"


class ImpersonatingPool:
    """The client's urllib3 pool, adding the impersonation headers to every request.

    Kubernetes wants one ``Impersonate-Group`` header per group; the official client merges its
    headers into a plain dict (one value per name), so they are added here, at the last step,
    where urllib3 sends every value of an ``HTTPHeaderDict`` as its own header line.
    """

    def __init__(self, pool: Any, identity: Identity) -> None:
        self._pool = pool
        self.identity = identity

    def request(self, method: str, url: str, *args: Any, headers: Any = None, **kwargs: Any) -> Any:
        merged = HTTPHeaderDict(dict(headers or {}))
        merged.discard(IMPERSONATE_USER)
        merged.discard(IMPERSONATE_GROUP)
        merged.add(IMPERSONATE_USER, self.identity.user)
        for group in self.identity.groups:
            merged.add(IMPERSONATE_GROUP, group)
        return self._pool.request(method, url, *args, headers=merged, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


def kubeconfig_files(cluster: ClusterConfig) -> list[str]:
    """The kubeconfig files the client would read for ``cluster`` (those that exist)."""
    if cluster.kubeconfig:
        return [cluster.kubeconfig]
    listed = os.environ.get("KUBECONFIG", "")
    paths = listed.split(os.pathsep) if listed else [os.path.expanduser("~/.kube/config")]
    return [p for p in paths if p and os.path.isfile(p)]


def check_kubeconfig(path: str) -> dict[str, Any]:
    """Refuse a kubeconfig the official client would choke on, with a line naming the file and key;
    else the file's document, for the client to use (``KubeconfigMerger``).

    The client reads the file with ``yaml.safe_load`` (an alias bomb would take minutes and
    gigabytes) and then indexes into it (a list or a string where a mapping belongs raises a bare
    ``AttributeError``). So the file is first read with gpubot's bounded loader and its shape
    checked. Only key names are shown, never a value: a kubeconfig holds tokens.
    """
    where = f"kubeconfig {printable(path)}"
    data = read_yaml_file(path, where)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with clusters, contexts and users, got {describe(data)}")
    for key in ("clusters", "contexts", "users"):
        items = data.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise ConfigError(f"{where}: {key}: expected a list, got {describe(items)}")
        inner = key[:-1]
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ConfigError(f"{where}: {key}[{i}]: expected a mapping with a name and {inner}")
            if item.get(inner) is not None and not isinstance(item[inner], dict):
                raise ConfigError(f"{where}: {key}[{i}].{inner}: expected a mapping, got {describe(item[inner])}")
    current = data.get("current-context")
    if current is not None and not isinstance(current, str):
        raise ConfigError(f"{where}: current-context: expected a context name, got {describe(current)}")
    return data


class KubeconfigMerger(kube_config.KubeConfigMerger):
    """The client's own merge of the kubeconfig files, over the documents gpubot has just read.

    The client parses each file again with PyYAML's pure-Python loader: 2 ms for a one-context
    file, tens of milliseconds for a real one carrying certificates, in every process that builds
    a client. ``check_kubeconfig`` has read it a moment before with libyaml, so that document is
    merged here instead, by the client's own rules (``load_config`` below is the client's, with
    the parse taken out). A file whose users have an ``auth-provider`` (whose refreshed tokens the
    client writes back, comparing with what it parsed) or that was not read is parsed by the client.
    """

    config_merged: Any  # the client's: a ConfigNode once a file is merged

    def __init__(self, paths: str, documents: dict[str, dict[str, Any]]) -> None:
        self._documents = documents
        super().__init__(paths)

    def load_config(self, path: str) -> None:
        document = self._documents.get(os.path.abspath(path))
        if document is None or any(isinstance(u, dict) and "auth-provider" in (u.get("user") or {})
                                 for u in document.get("users") or []):
            super().load_config(path)
            return
        if self.config_merged is None:
            config_merged = copy.deepcopy(document)
            for item in ("clusters", "contexts", "users"):
                config_merged[item] = []
            self.config_merged = kube_config.ConfigNode(path, config_merged, path)
        for item in ("clusters", "contexts", "users"):
            self._merge(item, document.get(item, []) or [], path)
        if "current-context" in document:
            self.config_merged.value["current-context"] = document["current-context"]
        self.config_files[path] = document


def load_kubeconfig(cluster: ClusterConfig, cfg: client.Configuration) -> None:
    """``config.load_kube_config(cluster's file or the default, cluster's context, cfg)``, with
    each file checked first (``check_kubeconfig``) and parsed once."""
    documents = {os.path.abspath(path): check_kubeconfig(path) for path in kubeconfig_files(cluster)}
    merger = KubeconfigMerger(cluster.kubeconfig or kube_config.KUBE_CONFIG_DEFAULT_LOCATION, documents)
    if merger.config is None:
        raise ConfigException("Invalid kube-config file. No configuration found.")
    loader = kube_config.KubeConfigLoader(
        config_dict=merger.config,
        config_base_path=None,
        active_context=cluster.context or None,
        config_persister=merger.save_changes,
    )
    loader.load_and_set(cfg)


def new_api_client(cluster: ClusterConfig, *, identity: Identity | None = None) -> client.ApiClient:
    """A fresh ApiClient for ``cluster`` (in-cluster service account or kubeconfig context);
    with ``identity``, every request it makes impersonates that user and groups."""
    try:
        cfg = client.Configuration()
        if cluster.in_cluster:
            config.load_incluster_config(client_configuration=cfg)
        else:
            load_kubeconfig(cluster, cfg)
        # Our read facade retries transient failures itself, within the request timeout; urllib3's
        # own three silent retries would multiply a hung API server's cost by four.
        cfg.retries = 0
        # one kept connection per read thread: the client's default (5 per CPU) is below the
        # reader's threads, and each request past it opens a connection, throws it away and logs
        # "Connection pool is full" on the user's terminal (gpubot pending reads many lists at once)
        cfg.connection_pool_maxsize = READ_THREADS
        api = client.ApiClient(configuration=cfg)
        if identity is not None:
            api.rest_client.pool_manager = ImpersonatingPool(api.rest_client.pool_manager, identity)  # type: ignore[assignment]
        return api
    except ConfigError as exc:
        raise ConfigError(f"cluster {cluster.name}: {exc.user_message}") from None
    except (
        ConfigException,
        OSError,
        TypeError,
        ValueError,
        KeyError,
        AttributeError,
        IndexError,
        yaml.YAMLError,
    ) as exc:
        # The message names the file/context but never carries a token (nor a line of the file).
        raise ConfigError(_why_not_loaded(cluster, exc)) from None


def _why_not_loaded(cluster: ClusterConfig, exc: Exception) -> str:
    """The kubeconfig's problem in words (``bot.probes.kubeconfig_problems``), else the client's
    own ConfigException text (it names keys and contexts, never a token), else the error's type."""
    from bot.commands import COMMANDS  # the commands that exist decide what to suggest

    known = {c.name for c in COMMANDS}
    explained = explain(cluster, has_command=known.__contains__) if not cluster.in_cluster else ""
    if explained:
        return explained
    where = cluster.kubeconfig or "the default kubeconfig"
    context = f" context {cluster.context}" if cluster.context else ""
    why = printable(str(exc).splitlines()[0])[:200] if isinstance(exc, ConfigException) and str(exc) else ""
    return f"cluster {cluster.name}: cannot load {where}{context}: {why or type(exc).__name__}"
