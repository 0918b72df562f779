"""How a failed read is classified and worded: the client's errors, one finding per kind, the
verdict that says first what could not be read (text and Slack), the JSON that says it in fields."""

from __future__ import annotations

import json
import ssl

import urllib3
from kubernetes.client.exceptions import ApiException

from bot.console.render_text import render_text
from bot.engine.unreadable import detections, incomplete_line, rbac_rules
from bot.errors import ApiRead
from bot.probes.read_errors import classify, safe_url
from bot.report import Finding, NodeRow, Report, Unreadable
from bot.slack.blocks import verdict_block
from bot.views.groups import verdict

SERVER = "https://10.0.0.1:6443"


def _status(code: int, message: str = "") -> ApiException:
    exc = ApiException(status=code, reason="x")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


def test_http_answers_are_classified_by_status() -> None:
    assert classify(_status(401))[0] == "unauthorized"
    kind, detail, status = classify(_status(403, 'nodes is forbidden: User "alice" cannot list resource "nodes"'))
    assert (kind, status) == ("forbidden", 403) and "alice" in detail
    assert classify(_status(404))[0] == "not_found"
    assert classify(_status(429))[:2] == ("failed", "429 Too Many Requests")
    assert classify(_status(500, "etcdserver: request timed out"))[1].startswith("500 Internal Server Error: etcd")


def test_transport_errors_are_classified_by_their_cause() -> None:
    pool = urllib3.HTTPConnectionPool("127.0.0.1", 1)
    refused = urllib3.exceptions.NewConnectionError(pool, "Failed to establish a new connection")
    refused.__cause__ = ConnectionRefusedError(111, "Connection refused")
    wrapped = urllib3.exceptions.MaxRetryError(pool, "/api/v1/nodes", reason=refused)
    assert classify(wrapped)[:2] == ("unreachable", "connection refused")
    silent = urllib3.exceptions.ReadTimeoutError(pool, "/api/v1/nodes", "Read timed out.")
    assert classify(silent, timeout_s=2.5)[:2] == ("timeout", "connected, but no answer within 2.5 s")
    tls = urllib3.exceptions.SSLError(ssl.SSLCertVerificationError(1, "certificate verify failed"))
    assert classify(urllib3.exceptions.MaxRetryError(pool, "/", reason=tls))[0] == "tls"
    assert classify(urllib3.exceptions.ProtocolError("Connection aborted."))[0] == "unreachable"


def test_a_server_url_is_shown_without_credentials() -> None:
    assert safe_url("https://admin:s3cret@10.0.0.1:6443/?token=abc") == SERVER


def _refused(read: ApiRead) -> Unreadable:
    return Unreadable(read.text(), "unreachable", "connection refused", SERVER, read)


def test_one_finding_per_kind_naming_every_read_it_cost() -> None:
    failures = [
        _refused(ApiRead("get", "pods", "ai", "p")),
        _refused(ApiRead("list", "nodes")),
        Unreadable("list events in ai", "forbidden", "events is forbidden", SERVER, ApiRead("list", "events", "ai")),
        Unreadable("list daemonsets", "forbidden", "daemonsets is forbidden", SERVER,
                   ApiRead("list", "daemonsets", group="apps")),
    ]
    found = detections([*failures, failures[0]])  # a repeat is one read
    assert [d.code for d in found] == ["API_UNREACHABLE", "READ_FORBIDDEN"]
    unreachable, forbidden = found
    assert unreachable.params["reads"] == "pods, nodes" and unreachable.params["error"] == "connection refused"
    assert unreachable.evidence == ("get pod ai/p: connection refused", "list nodes: connection refused")
    assert '# Role in namespace ai\n- apiGroups: [""]\n  resources: ["events"]' in forbidden.params["rbac"]
    assert '# ClusterRole\n- apiGroups: ["apps"]\n  resources: ["daemonsets"]\n  verbs: ["list"]' in rbac_rules(
        failures[2:]
    )
    assert incomplete_line(failures[:2]) == f"Could not read pods, nodes from {SERVER}: connection refused."


def _report() -> Report:
    report = Report(command="node-status", target={}, cluster="c")
    report.unreadable = [_refused(ApiRead("list", "pods"))]
    report.findings = [
        Finding("API_UNREACHABLE", "critical", f"Could not read pods from {SERVER}: connection refused", rank=0),
        Finding("NODE_NOT_READY", "critical", "tcs-1 is NotReady", rank=20, subject="node/tcs-1"),
    ]
    report.nodes = [NodeRow("tcs-1", ready=False, cordoned=False)]
    return report


def test_the_verdict_says_first_what_could_not_be_read() -> None:
    report = _report()
    found = verdict(report)
    assert found is not None
    assert found.text().startswith(f"Incomplete: Could not read pods from {SERVER}: connection refused.")
    assert "Found in what could be read: tcs-1 is NotReady" in found.text()
    text = render_text(report)
    assert text.splitlines()[4].startswith("Incomplete: Could not read pods")
    slack = verdict_block(found)["text"]["text"]
    assert slack.startswith(f"*Incomplete:* Could not read pods from {SERVER}")
    assert "*Found in what could be read:*" in slack
    data = report.to_dict()
    assert data["complete"] is False
    assert data["unreadable"] == [{"read": "list pods", "error": "unreachable", "detail": "connection refused",
                                   "server": SERVER, "verb": "list", "resource": "pods", "namespace": "",
                                   "group": ""}]


def test_a_complete_report_says_so() -> None:
    report = Report(command="why-pending", target={})
    assert report.to_dict()["complete"] is True and report.to_dict()["unreadable"] == []
    assert verdict(report) is None
