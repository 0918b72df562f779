"""The per-node pod lists over kept connections (``bot.probes.kept_gets``): the same pods as the
client reads, the client's errors, a whole-request timeout, a kept connection the server closed,
TLS with the kubeconfig's own credentials, and the client wherever its settings need it."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from bot.identity import Identity
from bot.probes.kept_gets import KeptGets
from bot.probes.kube import KubeReader
from bot.probes.kube_client import new_api_client
from bot.probes.read_errors import classify
from bot.probes.slim import slim
from bot.settings import ClusterConfig
from bot.sim.cluster import SimCluster
from bot.sim.scenario import load_scenario
from tests.probes.test_exec_tls import _issue, _key_pem, _pem

ROOT = Path(__file__).resolve().parents[2]
POD_LIST = json.dumps({"kind": "PodList", "metadata": {}, "items": [{"metadata": {"name": "p"}}]}).encode()


def _answer(status: int, body: bytes, reason: str = "OK") -> bytes:
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[socket.socket], None]], tuple[str, list[int]]]]:
    """Start a loopback server whose every connection ``handle`` serves; (URL, connections seen)."""
    stops: list[socket.socket] = []

    def start(handle: Callable[[socket.socket], None]) -> tuple[str, list[int]]:
        listener = socket.create_server(("127.0.0.1", 0))
        stops.append(listener)
        seen: list[int] = []

        def accept() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                seen.append(1)
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}", seen

    yield start
    for listener in stops:
        listener.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    return data


def _api(tmp_path: Path, url: str, *, identity: Identity | None = None) -> ApiClient:
    """A client of ``url`` as a kubeconfig with a bearer token configures it."""
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "kept-gets-token"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / f"kubeconfig-{abs(hash(url))}"
    path.write_text(yaml.safe_dump(config))
    return new_api_client(ClusterConfig(name="c", kubeconfig=str(path)), identity=identity)


@contextlib.contextmanager
def _serving(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path, handle: Callable[[socket.socket], None]
) -> Iterator[tuple[KeptGets, list[int]]]:
    """KeptGets of a loopback server whose connections ``handle`` serves, and the connections it saw."""
    url, seen = raw_server(handle)
    gets = KeptGets.for_client(_api(tmp_path, url))
    assert gets is not None
    try:
        yield gets, seen
    finally:
        gets.close()


async def test_per_node_lists_read_the_pods_the_client_reads_one_request_a_node(tmp_path: Path) -> None:
    async with SimCluster(load_scenario(ROOT / "scenarios" / "zombie-checkpoint.yaml"), workdir=tmp_path) as sim:
        settings = sim.settings()
        reader = KubeReader(new_api_client(settings.clusters[0]))
        try:
            nodes = {n["metadata"]["name"] for n in await reader.list_nodes()}
            before = reader.stats.requests
            kept = await reader.slim_pods(nodes=nodes, all_nodes=len(nodes) * 2)
            assert reader.stats.requests - before == len(nodes)
            through_client = [slim(p) for n in sorted(nodes)
                              for p in await reader.list_pods(field_selector=f"spec.nodeName={n}")]
        finally:
            reader.close()
    assert kept and sorted(kept, key=repr) == sorted(through_client, key=repr)


def test_a_kept_connection_the_server_closed_is_opened_again(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    def one_answer_then_close(conn: socket.socket) -> None:  # keep-alive promised, then dropped
        with conn:
            if _read_request(conn):
                conn.sendall(_answer(200, POD_LIST))

    with _serving(raw_server, tmp_path, one_answer_then_close) as (gets, seen):
        assert gets.get("/api/v1/pods", 5) == POD_LIST
        time.sleep(0.05)  # the server has closed the connection the first answer came on
        assert gets.get("/api/v1/pods", 5) == POD_LIST
    assert len(seen) == 2


def test_answers_share_one_connection_while_the_server_keeps_it(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    def keep_answering(conn: socket.socket) -> None:
        with conn:
            while _read_request(conn):
                conn.sendall(_answer(200, POD_LIST))

    with _serving(raw_server, tmp_path, keep_answering) as (gets, seen):
        assert [gets.get(f"/api/v1/pods?fieldSelector=spec.nodeName%3Dn{i}", 5) for i in range(5)] == [POD_LIST] * 5
    assert len(seen) == 1


def test_an_error_answer_is_the_clients_exception_with_the_servers_message(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    status = json.dumps({"kind": "Status", "code": 403, "message": 'pods is forbidden: User "x" cannot list'}).encode()

    def forbid(conn: socket.socket) -> None:
        with conn:
            if _read_request(conn):
                conn.sendall(_answer(403, status, "Forbidden"))

    with _serving(raw_server, tmp_path, forbid) as (gets, _), pytest.raises(ApiException) as caught:
        gets.get("/api/v1/pods", 5)
    assert caught.value.status == 403
    assert classify(caught.value) == ("forbidden", 'pods is forbidden: User "x" cannot list', 403)


@pytest.mark.parametrize("drip", [False, True])
def test_the_timeout_bounds_the_whole_request(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path, drip: bool
) -> None:
    """A server that never answers, and one that sends its body a byte at a time (each byte within
    the socket's wait, the whole far beyond the timeout)."""

    def slow(conn: socket.socket) -> None:
        with conn:
            if not _read_request(conn):
                return
            body = POD_LIST * 20
            if drip:
                conn.sendall(_answer(200, body)[: -len(body)])
            for i in range(len(body) if drip else 0):
                try:
                    conn.sendall(body[i:i + 1])
                except OSError:
                    return
                time.sleep(0.05)
            time.sleep(3)

    started = time.monotonic()
    with _serving(raw_server, tmp_path, slow) as (gets, _), pytest.raises(TimeoutError):
        gets.get("/api/v1/pods", 0.4)
    assert time.monotonic() - started < 1.5
    assert classify(TimeoutError())[0] == "timeout"


def test_tls_with_the_kubeconfigs_ca_client_certificate_and_token(tmp_path: Path) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _issue("test-ca", ca_key, None, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _issue_for_localhost(server_key, ca, ca_key)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = _issue("gpubot", client_key, (ca.subject, ca_key))
    (tmp_path / "ca.pem").write_bytes(_pem(ca))
    (tmp_path / "server.pem").write_bytes(_pem(server_cert))
    (tmp_path / "server.key").write_bytes(_key_pem(server_key))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(tmp_path / "ca.pem"))
    context.load_cert_chain(tmp_path / "server.pem", tmp_path / "server.key")
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    heard: list[bytes] = []

    def serve() -> None:
        try:
            raw, _ = listener.accept()
            with context.wrap_socket(raw, server_side=True) as conn:
                request = _read_request(conn)
                heard.append(request)
                conn.sendall(_answer(200, POD_LIST))
        except (OSError, ssl.SSLError):
            return

    threading.Thread(target=serve, daemon=True).start()
    url = f"https://localhost:{listener.getsockname()[1]}"
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": url,
                                               "certificate-authority-data": base64.b64encode(_pem(ca)).decode()}}],
        "users": [{"name": "u", "user": {"token": "kept-gets-token",
                                         "client-certificate-data": base64.b64encode(_pem(client_cert)).decode(),
                                         "client-key-data": base64.b64encode(_key_pem(client_key)).decode()}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    gets = KeptGets.for_client(new_api_client(ClusterConfig(name="c", kubeconfig=str(tmp_path / "kubeconfig"))))
    assert gets is not None
    try:
        assert gets.get("/api/v1/pods?limit=500", 5) == POD_LIST
    finally:
        gets.close()
        listener.close()
    assert heard and b"authorization: bearer kept-gets-token" in heard[0].lower()


def _issue_for_localhost(
    key: ec.EllipticCurvePrivateKey, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey
) -> x509.Certificate:
    """A server certificate for the name ``localhost`` (the test's URL), signed by the CA."""
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def test_what_the_client_must_send_itself_goes_through_it(tmp_path: Path) -> None:
    """A proxy, a TLS server name other than the URL's host, impersonation: the client's own."""
    assert KeptGets.for_client(_api(tmp_path, "http://127.0.0.1:1")) is not None
    proxied = _api(tmp_path, "http://127.0.0.1:2")
    proxied.configuration.proxy = "http://proxy.test:3128"
    assert KeptGets.for_client(proxied) is None
    named = _api(tmp_path, "https://127.0.0.1:3")
    named.configuration.tls_server_name = "kube.test"
    assert KeptGets.for_client(named) is None
    impersonating = _api(tmp_path, "http://127.0.0.1:4", identity=Identity(user="alice", groups=("sre",)))
    assert KeptGets.for_client(impersonating) is None


def test_a_chunked_answer_after_an_informational_one_is_read_whole(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    """The API server sends large lists in chunks; a 1xx answer (never sent for a GET, but legal)
    comes before the one that counts. Chunks split across socket writes, an extension, a trailer."""
    body = POD_LIST * 50

    def chunked(conn: socket.socket) -> None:
        with conn:
            while _read_request(conn):
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                for i in range(0, len(body), 1000):
                    part = body[i:i + 1000]
                    frame = f"{len(part):x};ext=1\r\n".encode() + part + b"\r\n"
                    conn.sendall(frame[:7])
                    conn.sendall(frame[7:])
                conn.sendall(b"0\r\nX-Trailer: t\r\n\r\n")

    with _serving(raw_server, tmp_path, chunked) as (gets, seen):
        assert gets.get("/api/v1/pods", 5) == body
        assert gets.get("/api/v1/pods", 5) == body  # the connection was left at the answer's end
    assert len(seen) == 1


def test_connection_close_is_honoured_and_the_next_get_opens_another(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    def close_after_one(conn: socket.socket) -> None:
        with conn:
            if _read_request(conn):
                conn.sendall(_answer(200, POD_LIST).replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1))

    with _serving(raw_server, tmp_path, close_after_one) as (gets, seen):
        assert gets.get("/api/v1/pods", 5) == POD_LIST
        assert gets.get("/api/v1/pods", 5) == POD_LIST
    assert len(seen) == 2


@pytest.mark.parametrize("answer", [
    _answer(200, POD_LIST)[:-5],  # the body is shorter than its Content-Length
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort",  # a chunk cut short
    b"HTTP/1.1 200 OK\r\nContent-Le",  # the head cut short
    b"SSH-2.0-OpenSSH_9.6\r\n\r\n",  # not HTTP at all
])
def test_an_answer_cut_short_or_not_http_is_a_reset_not_a_partial_body(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path, answer: bytes
) -> None:
    def cut(conn: socket.socket) -> None:
        with conn:
            if _read_request(conn):
                conn.sendall(answer)

    with _serving(raw_server, tmp_path, cut) as (gets, _), pytest.raises(ConnectionResetError):
        gets.get("/api/v1/pods", 5)
    assert classify(ConnectionResetError())[0] in ("unreachable", "failed")


def test_a_credential_that_would_break_its_header_line_is_refused_without_being_shown(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    heard: list[bytes] = []

    def record(conn: socket.socket) -> None:
        with conn:
            heard.append(_read_request(conn))

    url, _ = raw_server(record)
    api = _api(tmp_path, url)
    api.configuration.refresh_api_key_hook = None  # else the kubeconfig's token is read again
    for key in ("authorization", "BearerToken"):  # the client's key before 36, and from 36 on
        api.configuration.api_key[key] = "Bearer secret-token\r\nX-Injected: 1"
    gets = KeptGets.for_client(api)
    assert gets is not None
    try:
        with pytest.raises(ValueError) as caught:
            gets.get("/api/v1/pods", 5)
    finally:
        gets.close()
    assert "secret-token" not in str(caught.value)
    assert not any(b"X-Injected" in h for h in heard)


def test_the_request_is_one_http_1_1_get_with_the_host_and_the_credentials(
    raw_server: Callable[..., tuple[str, list[int]]], tmp_path: Path
) -> None:
    heard: list[bytes] = []

    def record(conn: socket.socket) -> None:
        with conn:
            while request := _read_request(conn):
                heard.append(request)
                conn.sendall(_answer(200, POD_LIST))

    with _serving(raw_server, tmp_path, record) as (gets, _):
        gets.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500", 5)
        with pytest.raises(ValueError):
            gets.get("/api/v1/pods?x=a b", 5)  # never a space (or a line break) in the request line
    head = heard[0].decode("latin-1").split("\r\n")
    assert head[0] == "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500 HTTP/1.1"
    port = head[1].rsplit(":", 1)[1]
    assert head[1] == f"Host: 127.0.0.1:{port}"
    assert "authorization: bearer kept-gets-token" in heard[0].decode("latin-1").lower()
    assert len(heard) == 1
