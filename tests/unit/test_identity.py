"""identity_map settings: Slack ids to Kubernetes identities, header-safe, errors naming the key."""

from __future__ import annotations

import pytest

from bot.errors import ConfigError
from bot.identity import Identity
from bot.settings import load_settings


def test_identity_map_is_parsed() -> None:
    settings = load_settings(
        env={}, identity_map={"U0ALICE": {"user": "alice@corp.example", "groups": ["ml-team", "oidc:gpu"]},
                              "S0SRE": {"user": "system:serviceaccount:ops:sre"}}
    )
    assert settings.identity_map == {
        "U0ALICE": Identity("alice@corp.example", ("ml-team", "oidc:gpu")),
        "S0SRE": Identity("system:serviceaccount:ops:sre"),
    }
    assert load_settings(env={}).identity_map == {}


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"alice": {"user": "alice"}}, "'alice' is not a Slack user"),
        ({"U0ALICE": {"user": "alice\r\nImpersonate-Group: system:masters"}}, "identity_map[U0ALICE].user"),
        ({"U0ALICE": {"user": "alice", "groups": ["ok", "sp ace"]}}, "identity_map[U0ALICE].groups"),
        ({"U0ALICE": {"user": "alice", "uid": "1"}}, "identity_map[U0ALICE]: expected"),
        ({"U0ALICE": "alice"}, "identity_map[U0ALICE]: expected"),
        (["U0ALICE"], "expected a mapping"),
    ],
)
def test_bad_identity_maps_are_refused_without_echoing_values(raw: object, names: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(env={}, identity_map=raw)
    assert names in err.value.user_message
    assert "system:masters" not in err.value.user_message
