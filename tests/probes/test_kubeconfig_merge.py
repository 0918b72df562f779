"""gpubot's kubeconfig load gives the client configuration the official client's own load gives.

``bot.probes.kube_client.load_kubeconfig`` merges the documents gpubot has already parsed
(``KubeconfigMerger``) instead of letting the client parse each file again with PyYAML's
pure-Python loader. Compared here with ``kubernetes.config.load_kube_config`` on the shapes users
have: one file, certificates by relative path and inline, an exec plugin, a token file,
``KUBECONFIG`` naming several files (first one wins per name, current-context from the last file
that states one), an explicit context, and a user with an ``auth-provider`` (left to the client).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from bot.probes.kube_client import load_kubeconfig
from bot.settings import ClusterConfig

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
#: what a loaded configuration is compared by (files written from inline data have random names:
#: compared by content)
FIELDS = ("host", "verify_ssl", "tls_server_name", "proxy")


def _doc(name: str, server: str, user: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **cluster}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "ml"}}],
        "current-context": name,
    }


def _view(cfg: client.Configuration) -> dict[str, Any]:
    out: dict[str, Any] = {f: getattr(cfg, f) for f in FIELDS}
    for key in ("ssl_ca_cert", "cert_file", "key_file"):
        path = getattr(cfg, key)
        out[key] = Path(path).read_bytes() if path else None
    out["api_key"] = dict(cfg.api_key)
    return out


def _both(monkeypatch: pytest.MonkeyPatch, cluster: ClusterConfig, env: str | None = None) -> tuple[Any, Any]:
    if env is not None:
        monkeypatch.setenv("KUBECONFIG", env)
        monkeypatch.setattr("kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", env)
    theirs, ours = client.Configuration(), client.Configuration()
    config.load_kube_config(config_file=cluster.kubeconfig or None, context=cluster.context or None,
                            client_configuration=theirs)
    load_kubeconfig(cluster, ours)
    return _view(ours), _view(theirs)


def _write(path: Path, doc: dict[str, Any], *, as_json: bool = False) -> str:
    path.write_text(json.dumps(doc) if as_json else yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


def test_one_file_with_certificates_by_relative_path_and_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_text("relative ca\n")
    (tmp_path / "token").write_text("file-token\n")
    doc = _doc("a", "https://a.example:6443", {"tokenFile": "token"}, **{"certificate-authority": "certs/ca.crt"})
    inline = _doc("b", "https://b.example", {"token": "t0k"}, **{"certificate-authority-data": CA,
                                                                  "tls-server-name": "api.b"})
    doc["clusters"] += inline["clusters"]
    doc["users"] += inline["users"]
    doc["contexts"] += inline["contexts"]
    path = _write(tmp_path / "config", doc)
    for context in ("", "b"):
        ours, theirs = _both(monkeypatch, ClusterConfig(name="c", kubeconfig=path, context=context))
        assert ours == theirs
    assert ours["host"] == "https://b.example" and ours["tls_server_name"] == "api.b"


def test_an_exec_plugin_user_and_a_json_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = tmp_path / "plugin"
    status = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
              "status": {"token": "from-plugin"}}
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps(status)}'\n")
    plugin.chmod(0o755)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin),
                     "interactiveMode": "Never"}}
    path = _write(tmp_path / "config.json", _doc("e", "https://e.example", user, **{"insecure-skip-tls-verify": True}),
                  as_json=True)
    ours, theirs = _both(monkeypatch, ClusterConfig(name="c", kubeconfig=path))
    assert ours == theirs and list(ours["api_key"].values()) == ["Bearer from-plugin"]
    assert ours["verify_ssl"] is False


def test_kubeconfig_naming_several_files_merges_them_as_the_client_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _doc("shared", "https://first.example", {"token": "one"})
    second = _doc("shared", "https://second.example", {"token": "two"})  # same names: the first file's win
    extra = _doc("extra", "https://extra.example", {"token": "three"})
    second["clusters"] += extra["clusters"]
    second["users"] += extra["users"]
    second["contexts"] += extra["contexts"]
    second["current-context"] = "extra"  # the last file that states one sets it
    a, b = _write(tmp_path / "a", first), _write(tmp_path / "b", second)
    env = f"{a}:{tmp_path / 'missing'}:{b}"
    ours, theirs = _both(monkeypatch, ClusterConfig(name="c"), env)
    assert ours == theirs and ours["host"] == "https://extra.example"
    ours, theirs = _both(monkeypatch, ClusterConfig(name="c", context="shared"), env)
    assert ours == theirs and ours["host"] == "https://first.example"


def test_an_auth_provider_user_is_left_to_the_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client writes refreshed auth-provider tokens back to the file, comparing with what it
    parsed itself: such a file is parsed by the client, and loads as it always did."""
    user = {"auth-provider": {"name": "oidc", "config": {"id-token": "header.payload.sig", "client-id": "x",
                                                         "idp-issuer-url": "https://idp.example"}}}
    path = _write(tmp_path / "config", _doc("o", "https://o.example", user))
    parsed: list[str] = []
    original = yaml.safe_load

    def counting(stream: Any) -> Any:
        parsed.append("client")
        return original(stream)

    monkeypatch.setattr("kubernetes.config.kube_config.yaml.safe_load", counting)
    ours = client.Configuration()
    with pytest.raises(Exception):  # noqa: B017 - an id-token that is no JWT: what the client says, both ways
        config.load_kube_config(config_file=path, client_configuration=client.Configuration())
    with pytest.raises(Exception):  # noqa: B017
        load_kubeconfig(ClusterConfig(name="c", kubeconfig=path), ours)
    assert parsed == ["client", "client"]


def test_a_file_gpubot_read_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "config", _doc("a", "https://a.example", {"token": "t"}))

    def refuse(stream: Any) -> Any:
        raise AssertionError("the client parsed the kubeconfig again")

    monkeypatch.setattr("kubernetes.config.kube_config.yaml.safe_load", refuse)
    cfg = client.Configuration()
    load_kubeconfig(ClusterConfig(name="c", kubeconfig=path), cfg)
    assert cfg.host == "https://a.example" and list(cfg.api_key.values()) == ["Bearer t"]
