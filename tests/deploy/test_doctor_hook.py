"""The ``helm test`` hook: one Pod that runs ``gpubot doctor`` as the bot would run.

Same service account, image, settings file, Slack Secret and (when set) Alertmanager token as the
bot's Deployment, so the doctor asks the API server and Slack exactly what the bot will need; no
state volume, no SSH key (doctor writes nothing). The strict checks of test_chart.py (schemas,
security scan, labels) cover it like every other object the chart renders.
"""

from __future__ import annotations

from typing import Any

from tests.deploy.render import NAMESPACE, find, one, render


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def test_the_hook_runs_doctor_as_the_bot() -> None:
    objs = render()
    pod = one(objs, "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["metadata"]["namespace"] == NAMESPACE
    bot = one(objs, "Deployment")["spec"]["template"]["spec"]
    spec = pod["spec"]
    assert spec["serviceAccountName"] == bot["serviceAccountName"] and spec["restartPolicy"] == "Never"
    (container,) = spec["containers"]
    (bot_container,) = bot["containers"]
    assert container["args"] == ["doctor"] and container["image"] == bot_container["image"]
    env, bot_env = _env(container), _env(bot_container)
    for name in ("GPUBOT_CONFIG", "GPUBOT_SLACK_MODE", "GPUBOT_NAMESPACE", "GPUBOT_SLACK_BOT_TOKEN_FILE",
                 "GPUBOT_SLACK_APP_TOKEN_FILE"):
        assert env[name] == bot_env[name], name
    assert spec["securityContext"] == bot["securityContext"]
    assert container["securityContext"] == bot_container["securityContext"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {m["mountPath"] for m in bot_container["volumeMounts"] if m["name"] in ("config", "slack")} <= mounts


def test_the_hook_follows_the_slack_mode_and_the_alerts_secret() -> None:
    objs = render({"slack": {"mode": "http"}, "alerts": {"existingSecret": "am"},
                   "config": {"alerts_channel": "C0ALERTS"}})
    env = _env(one(objs, "Pod")["spec"]["containers"][0])
    assert "GPUBOT_SLACK_SIGNING_SECRET_FILE" in env and "GPUBOT_SLACK_APP_TOKEN_FILE" not in env
    assert env["GPUBOT_ALERTS_TOKEN_FILE"].startswith("/etc/gpubot/alerts/")
    assert len(find(objs, "Pod")) == 1
