"""The exec stream over TLS with a kubeconfig's own credentials: the cluster's CA, a client
certificate (mutual TLS), the server name, and a bearer token, as ``load_kube_config`` reads them.

The simulator serves plain HTTP, so this stands up a small TLS WebSocket server that answers the
exec the way the API server does (v4.channel.k8s.io frames, Status on channel 3), and refuses a
client without a certificate signed by the CA.
"""

from __future__ import annotations

import base64
import datetime
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from bot.errors import KubeApiError
from bot.probes.exec import ExecStream
from bot.probes.kube_client import new_api_client
from bot.settings import ClusterConfig

TOKEN = "tls-test-token"


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _issue(
    name: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *, ca: bool = False, server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_name, signer = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            # the name only, not the address: the kubeconfig's tls-server-name must be what is checked
            x509.SubjectAlternativeName([x509.DNSName("kube.test")]),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(signer, hashes.SHA256())


@pytest.fixture
async def tls_api(tmp_path: Path) -> AsyncIterator[tuple[str, dict[str, bytes]]]:
    """(https URL, PEMs) of a TLS server with one exec endpoint that requires a client certificate."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _issue("test-ca", ca_key, None, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _issue("kube.test", server_key, (ca.subject, ca_key), server=True)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _issue("gpubot", client_key, (ca.subject, ca_key))
    for name, data in (("ca.pem", _pem(ca)), ("server.pem", _pem(server_cert)), ("server.key", _key_pem(server_key))):
        (tmp_path / name).write_bytes(data)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(tmp_path / "ca.pem"))
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED

    async def exec_handler(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        ws = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
        await ws.prepare(request)
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(x[0] for x in peer["subject"]) if peer else {}
        argv = request.query.getall("command")
        await ws.send_bytes(b"\x01" + f"{subject.get('commonName')} ran {' '.join(argv)}\n".encode())
        await ws.send_bytes(b"\x03" + json.dumps({"metadata": {}, "status": "Success"}).encode())
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/{ns}/pods/{pod}/exec", exec_handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"https://127.0.0.1:{port}", {
            "ca": _pem(ca),
            "client_cert": _pem(client_cert),
            "client_key": _key_pem(client_key),
        }
    finally:
        await runner.cleanup()


def _kubeconfig(tmp_path: Path, server: str, pems: dict[str, bytes], *, with_cert: bool = True) -> str:
    user: dict[str, str] = {"token": TOKEN}
    if with_cert:
        user["client-certificate-data"] = base64.b64encode(pems["client_cert"]).decode()
        user["client-key-data"] = base64.b64encode(pems["client_key"]).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(pems["ca"]).decode(),
            "tls-server-name": "kube.test",
        }}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / ("kubeconfig" if with_cert else "kubeconfig-nocert")
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def test_exec_over_tls_uses_the_kubeconfig_ca_client_certificate_server_name_and_token(
    tls_api: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    url, pems = tls_api
    api = new_api_client(ClusterConfig(name="c", kubeconfig=_kubeconfig(tmp_path, url, pems)))
    out = await ExecStream(api, timeout=5).stream_exec("ns", "pod", "box", ["nvidia-smi", "-L"])
    assert (out.stdout, out.code, out.timed_out) == ("gpubot ran nvidia-smi -L\n", 0, False)


async def test_a_server_that_wants_a_client_certificate_refuses_one_without(
    tls_api: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    url, pems = tls_api
    api = new_api_client(ClusterConfig(name="c", kubeconfig=_kubeconfig(tmp_path, url, pems, with_cert=False)))
    with pytest.raises(KubeApiError) as caught:
        await ExecStream(api, timeout=5).stream_exec("ns", "pod", "box", ["nvidia-smi", "-L"])
    assert TOKEN not in str(caught.value)


async def test_a_server_certificate_from_another_ca_is_refused(
    tls_api: tuple[str, dict[str, bytes]], tmp_path: Path
) -> None:
    url, pems = tls_api
    other_key = ec.generate_private_key(ec.SECP256R1())
    other = _pem(_issue("other-ca", other_key, None, ca=True))
    api = new_api_client(ClusterConfig(name="c", kubeconfig=_kubeconfig(tmp_path, url, {**pems, "ca": other})))
    with pytest.raises(KubeApiError) as caught:
        await ExecStream(api, timeout=5).stream_exec("ns", "pod", "box", ["nvidia-smi", "-L"])
    assert "SSL" in str(caught.value) or "Certificate" in str(caught.value)
