"""What a request gpubot sends to the API server itself takes from the official client's settings.

Two reads do not go through the generated client: the exec stream (``bot.probes.exec``: a
WebSocket the client would run in a thread per exec) and the small GETs that node-level lists
make by the hundred (``bot.probes.kept_gets``). Both speak to the same server as the client, with
the TLS settings and credentials the kubeconfig or the service account gave it: read here, once.
"""

from __future__ import annotations

import ssl
import time

from kubernetes import client


def ssl_context(cfg: client.Configuration) -> ssl.SSLContext | None:
    """The TLS settings the kubeconfig (or the service account) gave the official client; None
    for a plain-HTTP server."""
    if not str(cfg.host).startswith("https"):
        return None
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cfg.assert_hostname is False:
        context.check_hostname = False
    return context


class CredentialHeaders:
    """The client's default headers and its credentials (a bearer token, an API key), re-read
    every ``TTL_S``: the configuration's refresh hook (kubeconfig exec plugins, the service
    account's rotated token) re-reads the whole configuration, too slow for every request."""

    TTL_S = 10.0

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self._read: tuple[float, dict[str, str]] | None = None

    def __call__(self) -> dict[str, str]:
        now = time.monotonic()
        if self._read is None or now - self._read[0] > self.TTL_S:
            headers = dict(self.api_client.default_headers)
            for setting in self.api_client.configuration.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    headers[str(setting["key"])] = str(setting["value"])
            self._read = (now, headers)
        return self._read[1]
