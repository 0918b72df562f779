"""Settings: one typed object, secrets never shown, bad configuration fails at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.settings import load_settings

TOKEN = "xoxb-very-secret-token-123"


def test_secrets_never_in_repr_or_str(tmp_path: Path) -> None:
    secret_file = tmp_path / "signing"
    secret_file.write_text("sig-secret-456\n")
    s = load_settings(env={"GPUBOT_SLACK_BOT_TOKEN": TOKEN, "GPUBOT_SLACK_SIGNING_SECRET_FILE": str(secret_file)})
    assert s.slack_bot_token.get() == TOKEN
    assert s.slack_signing_secret.get() == "sig-secret-456"
    for text in (repr(s), str(s), repr(s.slack_bot_token), f"{s.slack_bot_token}"):
        assert TOKEN not in text and "sig-secret-456" not in text


def test_yaml_file_then_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "gpubot.yaml"
    cfg.write_text(
        "ssh_concurrency: 4\nclusters:\n  - {name: prod, context: prod-ctx}\n  - {name: lab, kubeconfig: /k}\n"
        "channel_clusters: {C1: lab}\napprovers: {kubelet.restart: [U1, S2]}\n"
    )
    s = load_settings(env={"GPUBOT_CONFIG": str(cfg), "GPUBOT_SSH_CONCURRENCY": "8"})
    assert s.ssh_concurrency == 8
    assert s.cluster(None).name == "prod" and s.cluster("lab").kubeconfig == "/k"
    assert s.approvers["kubelet.restart"] == ("U1", "S2")


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"GPUBOT_SLACK_MODE": "carrier-pigeon"}, "slack_mode"),
        ({"GPUBOT_SSH_CONCURRENCY": "many"}, "ssh_concurrency"),
        ({"GPUBOT_SSH_CONCURRENCY": "0"}, "ssh_concurrency"),
        ({"GPUBOT_PAGE_SIZE": "0"}, "page_size"),
        ({"GPUBOT_MAX_CONCURRENT_DIAGNOSES": "0"}, "max_concurrent_diagnoses"),
        ({"GPUBOT_MAX_CONCURRENT_DIAGNOSES": "some"}, "max_concurrent_diagnoses"),
        ({"GPUBOT_LOG_LEVEL": "chatty"}, "log_level: expected one of DEBUG, INFO"),
        ({"GPUBOT_SLACK_BOT_TOKEN_FILE": "/nonexistent/token"}, "cannot read"),
        ({"GPUBOT_CONFIG": "/nonexistent/gpubot.yaml"}, "cannot read"),
    ],
)
def test_bad_configuration_fails_clearly(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_settings(env=env)


def test_unknown_cluster_and_unknown_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("clusters:\n  - {name: a, kubecfg: /x}\n")
    with pytest.raises(ConfigError, match="unknown keys"):
        load_settings(env={"GPUBOT_CONFIG": str(cfg)})
    cfg.write_text("channel_clusters: {C1: nowhere}\n")
    with pytest.raises(ConfigError, match="unknown cluster"):
        load_settings(env={"GPUBOT_CONFIG": str(cfg)})
    with pytest.raises(ConfigError, match="unknown cluster"):
        load_settings(env={}).cluster("other")
    with pytest.raises(ConfigError, match="unknown settings"):
        load_settings(env={}, bogus=1)


def test_a_secret_pasted_into_a_numeric_setting_is_not_echoed() -> None:
    token = "xoxb-1234567890-abcdefghijkl"
    with pytest.raises(ConfigError) as caught:
        load_settings(env={"GPUBOT_API_TIMEOUT_S": token})
    assert token not in str(caught.value)
    assert "api_timeout_s" in str(caught.value)


def test_log_level_is_accepted_in_any_case_and_stored_upper_case() -> None:
    assert load_settings(env={"GPUBOT_LOG_LEVEL": "debug"}).log_level == "DEBUG"
    assert load_settings(env={}).log_level == "INFO"
