"""Build official ``kubernetes`` API clients for a configured cluster.

This module only creates clients; it performs no request. Both the read facade (``kube.py``)
and the actions package get their ``ApiClient`` here so that TLS, tokens and contexts are set up
in exactly one place.
"""

from __future__ import annotations

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from bot.errors import ConfigError
from bot.settings import ClusterConfig


def new_api_client(cluster: ClusterConfig) -> client.ApiClient:
    """A fresh ApiClient for ``cluster`` (in-cluster service account or kubeconfig context)."""
    try:
        if cluster.in_cluster:
            cfg = client.Configuration()
            config.load_incluster_config(client_configuration=cfg)
            return client.ApiClient(configuration=cfg)
        return config.new_client_from_config(
            config_file=cluster.kubeconfig or None, context=cluster.context or None
        )
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        # The message names the file/context but never carries a token.
        where = cluster.kubeconfig or "default kubeconfig"
        raise ConfigError(
            f"cluster {cluster.name}: cannot load {where}"
            + (f" context {cluster.context}" if cluster.context else "")
            + f": {type(exc).__name__}"
        ) from None
