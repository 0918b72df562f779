"""The redaction rules, one by one: what a capture keeps and what it never lets out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.capture.redact import REDACTED, Redactions, looks_secret, redact_object, redact_words, scrub_text
from bot.capture.secret_names import secret_name
from bot.capture.secret_text import scrub_command_text

SLACK = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _pod(**container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ai", "labels": {"app": "train"}, "annotations": {}},
        "spec": {"containers": [{"name": "main", "image": "pytorch:2.1", **container}]},
    }


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["containers"][0]


def test_every_env_value_goes_but_references_stay() -> None:
    env = [
        {"name": "SLACK_TOKEN", "value": SLACK},
        {"name": "MODEL", "value": "llama-7b"},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
        {"name": "EMPTY", "value": ""},
    ]
    tally = Redactions()
    out = _container(redact_object(_pod(env=env, envFrom=[{"secretRef": {"name": "s"}}]), tally))
    assert out["env"][0] == {"name": "SLACK_TOKEN", "value": REDACTED}
    assert out["env"][1] == {"name": "MODEL", "value": REDACTED}
    assert out["env"][2] == {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}
    assert out["env"][3]["value"] == REDACTED
    assert out["envFrom"] == [{"secretRef": {"name": "s"}}]
    assert tally.counts["env values"] == 3


def test_gpu_selection_variables_keep_a_device_list_only() -> None:
    env = [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "GPU-5e1c0a3e-0000-4000-8000-000000000001,1"},
        {"name": "CUDA_VISIBLE_DEVICES", "value": "0,1"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": AWS},
    ]
    out = _container(redact_object(_pod(env=env), Redactions()))
    assert [e["value"] for e in out["env"]] == [
        "GPU-5e1c0a3e-0000-4000-8000-000000000001,1",
        "0,1",
        "compute,utility",
        REDACTED,
    ]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["--token=abc"], ["--token=<redacted>"]),
        (["--password", "hunter2", "--port", "80"], ["--password", REDACTED, "--port", "80"]),
        (["token=abc", "--x"], ["token=<redacted>", "--x"]),
        (["serve", f"--slack={SLACK}"], ["serve", "--slack=<redacted>"]),
        (["curl", "-H", "Authorization: Bearer abc.def"], ["curl", "-H", "Authorization: Bearer <redacted>"]),
        (["run", "0123456789abcdef0123456789abcdef"], ["run", REDACTED]),
        (["x", "dGhpcyBpcyBhIHNlY3JldCBrZXkgb2YgNDAgYnl0ZXM1"], ["x", REDACTED]),
        (["sh", "-c", f"export K={AWS}; python train.py"], ["sh", "-c", f"export K={REDACTED}; python train.py"]),
        # what the diagnosis reads stays: flags, paths, resource names, scheduler names
        (
            ["--device-plugin-path=/var/lib/kubelet/device-plugins", "--scheduler-name=hami-scheduler", "-v", "4"],
            ["--device-plugin-path=/var/lib/kubelet/device-plugins", "--scheduler-name=hami-scheduler", "-v", "4"],
        ),
        (["python", "train.py", "--epochs", "3"], ["python", "train.py", "--epochs", "3"]),
    ],
)
def test_command_words(words: list[str], expected: list[str]) -> None:
    assert redact_words(words, Redactions()) == expected


def test_metadata_managed_fields_and_embedded_specs_dropped() -> None:
    pod = _pod()
    applied = json.dumps({"apiVersion": "v1", "kind": "Pod", "spec": {"env": [{"value": SLACK}]}})
    pod["metadata"].update(
        managedFields=[{"manager": "kubectl"}],
        annotations={
            "kubectl.kubernetes.io/last-applied-configuration": applied,
            "example.com/copy": applied,
            "example.com/api-token": "plain-looking",
            "hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,1024,30:;",
            "hami.io/webhook": "ignore",
            "example.com/note": f"see {GITHUB}",
        },
        labels={"app": "train", "hash": "0123456789abcdef0123456789abcdef"},
    )
    tally = Redactions()
    meta = redact_object(pod, tally)["metadata"]
    assert "managedFields" not in meta
    assert meta["annotations"] == {
        "example.com/api-token": REDACTED,
        "hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,1024,30:;",
        "hami.io/webhook": "ignore",
        "example.com/note": REDACTED,
    }
    assert meta["labels"] == {"app": "train", "hash": REDACTED}
    assert tally.counts["annotations that embed a whole object (dropped)"] == 2
    assert SLACK not in tally.summary() and "plain-looking" not in tally.summary()


def test_workload_templates_and_probes_are_redacted_too() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ai"},
        "spec": {
            "template": {
                "metadata": {"annotations": {"example.com/secret": "s3cr3t-value"}},
                "spec": {
                    "imagePullSecrets": [{"name": "regcred"}],
                    "containers": [
                        {
                            "name": "c",
                            "env": [{"name": "K", "value": "v"}],
                            "livenessProbe": {
                                "exec": {"command": ["check", "--api-key", "zzz"]},
                                "httpGet": {"httpHeaders": [{"name": "X-Auth", "value": "abc"}]},
                            },
                        }
                    ],
                },
            }
        },
    }
    out = redact_object(deployment, Redactions())
    spec = out["spec"]["template"]["spec"]
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["containers"][0]["env"] == [{"name": "K", "value": REDACTED}]
    probe = spec["containers"][0]["livenessProbe"]
    assert probe["exec"]["command"] == ["check", "--api-key", REDACTED]
    assert probe["httpGet"]["httpHeaders"] == [{"name": "X-Auth", "value": REDACTED}]
    assert out["spec"]["template"]["metadata"]["annotations"] == {"example.com/secret": REDACTED}
    # the input is not changed
    assert deployment["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "v"


def test_token_shapes_anywhere_and_node_images() -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "message": f"pull failed: {AWS} denied"}
    assert redact_object(event, Redactions())["message"] == f"pull failed: {REDACTED} denied"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"images": [{"names": ["a"]}]}}
    assert "images" not in redact_object(node, Redactions())["status"]


def test_secret_shapes() -> None:
    for secret in (SLACK, AWS, GITHUB, "xapp-1-A0123-4567-abcdef", "Bearer abcdef", "0" * 40):
        assert looks_secret(secret), secret
    for plain in ("nvidia.com/gpu", "/var/lib/kubelet/device-plugins/kubelet.sock", "GPU-5e1c0a3e-0000", "true"):
        assert not looks_secret(plain), plain
    assert scrub_text(f"a {SLACK} b") == (f"a {REDACTED} b", 1)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("pw", True),
        ("--db-pass", True),
        ("PGPASSWORD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("apiKey", True),
        ("example.com/deploy-token", True),
        ("X-API-Key", True),
        ("--tokenizer", False),
        ("--max-tokens", False),
        ("--token-file", False),
        ("secret-name", False),
        ("auth-mode", False),
        ("hami.io/webhook", False),
        ("--bypass-cache", False),
    ],
)
def test_secret_names_are_judged_by_whole_words(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # -p: a port, a port mapping, a path or $VAR stays; anything else is a password
        (["docker", "run", "-p", "80:80"], ["docker", "run", "-p", "80:80"]),
        (["-p", "127.0.0.1:8080:80/tcp"], ["-p", "127.0.0.1:8080:80/tcp"]),
        (["ssh", "-p", "2222"], ["ssh", "-p", "2222"]),
        (["mkdir", "-p", "/data/x"], ["mkdir", "-p", "/data/x"]),
        (["mysql", "-p", "hunter2"], ["mysql", "-p", REDACTED]),
        (["mysql", "-phunter2"], ["mysql", f"-p{REDACTED}"]),
        (["find", ".", "-print"], ["find", ".", "-print"]),
        (["curl", "-u", "me:hunter2"], ["curl", "-u", f"me:{REDACTED}"]),
        (["--db", "postgres://app:hunter2@db/x"], ["--db", f"postgres://app:{REDACTED}@db/x"]),
        (
            ["sh", "-c", "DB_PASS=x1 run && mysql -phunter2"],
            ["sh", "-c", f"DB_PASS={REDACTED} run && mysql -p{REDACTED}"],
        ),
    ],
)
def test_structural_command_rules(words: list[str], expected: list[str]) -> None:
    assert redact_words(words, Redactions()) == expected


def test_embedded_json_is_redacted_by_key_and_kept_otherwise() -> None:
    pod = _pod()
    pod["metadata"]["annotations"] = {
        "example.com/config": json.dumps({"user": "app", "db": {"password": "hunter2"}, "auth": "enabled"}),
        "example.com/plain": '{"replicas": 3}',
        "example.com/yaml": "user: app\nsecret: hunter2\n",
    }
    meta = redact_object(pod, Redactions())["metadata"]["annotations"]
    assert json.loads(meta["example.com/config"]) == {"user": "app", "db": {"password": REDACTED}, "auth": "enabled"}
    assert meta["example.com/plain"] == '{"replicas": 3}'  # untouched text when nothing was secret
    assert "hunter2" not in meta["example.com/yaml"] and "user: app" in meta["example.com/yaml"]


def test_free_text_rules_and_private_keys() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----"
    assert scrub_text(f"key {pem} end") == (f"key {REDACTED} end", 1)
    assert scrub_text("connect pw=hunter2 now")[0] == f"connect pw={REDACTED} now"
    assert scrub_command_text("login password: hunter2")[0] == f"login password: {REDACTED}"
    # prose keeps its words: the colon rule is for shell strings and notes only
    assert scrub_text("failed to fetch token: the server said no")[1] == 0


def test_uuids_are_identifiers_not_secrets() -> None:
    """HAMi's register annotation lists cards by UUID: the diagnosis matches on them."""
    register = json.dumps([{"id": "GPU-3a8f0c21-5d7e-4b19-a6c2-0a1000000001", "count": 10}], separators=(",", ":"))
    pod = _pod()
    pod["metadata"]["annotations"] = {"hami.io/node-nvidia-register": register}
    assert redact_object(pod, Redactions())["metadata"]["annotations"]["hami.io/node-nvidia-register"] == register
    for uuid in ("GPU-3a8f0c21-5d7e-4b19-a6c2-0a1000000001", "MIG-GPU-3a8f0c21-5d7e-4b19-a6c2-0a1000000001/1/0"):
        assert not looks_secret(uuid)
