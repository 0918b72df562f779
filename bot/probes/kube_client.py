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
        cfg = client.Configuration()
        if cluster.in_cluster:
            config.load_incluster_config(client_configuration=cfg)
        else:
            config.load_kube_config(
                config_file=cluster.kubeconfig or None, context=cluster.context or None, client_configuration=cfg
            )
        # Our read facade retries transient failures itself, within the request timeout; urllib3's
        # own three silent retries would multiply a hung API server's cost by four.
        cfg.retries = 0
        return client.ApiClient(configuration=cfg)
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        # The message names the file/context but never carries a token.
        where = cluster.kubeconfig or "default kubeconfig"
        raise ConfigError(
            f"cluster {cluster.name}: cannot load {where}"
            + (f" context {cluster.context}" if cluster.context else "")
            + f": {type(exc).__name__}"
        ) from None
