"""The Slack side of doctor: the tokens work and carry the scopes the app manifest declares.

The bot token is checked with ``auth.test`` (which any valid token may call) and the scopes
Slack returns in its ``x-oauth-scopes`` header, against ``bot.slack.scopes.BOT_SCOPES`` (what
deploy/slack-app-manifest*.yaml declare; a test keeps them equal). The app-level token of Socket
Mode is checked with ``apps.connections.open``, which only hands out a WebSocket URL; HTTP mode
needs its signing secret, which only Slack's own requests can prove. No token is ever shown.
"""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.doctor.result import CheckLine
from bot.settings import Settings
from bot.slack.scopes import APP_TOKEN_SCOPE, BOT_SCOPES

TIMEOUT_S = 10
_REINSTALL = ("add them to the app (deploy/slack-app-manifest.yaml lists every scope: paste it under "
              "App Manifest), reinstall the app to the workspace, and update the bot token Secret")


def _error(exc: SlackApiError) -> str:
    return str((exc.response.data or {}).get("error", "error")) if exc.response is not None else "error"


async def _bot_token(settings: Settings) -> CheckLine:
    client = AsyncWebClient(token=settings.slack_bot_token.get(), base_url=settings.slack_api_url, timeout=TIMEOUT_S)
    try:
        resp = await client.auth_test()
    except SlackApiError as exc:
        error = _error(exc)
        return CheckLine("slack.bot-token", "fail", f"Slack refuses the bot token: auth.test says {error}",
                         fix="copy the Bot User OAuth Token (xoxb-…) from OAuth & Permissions into the Slack "
                             "Secret (key bot-token) and restart the bot")
    except (OSError, TimeoutError) as exc:
        return CheckLine("slack.bot-token", "unknown", f"cannot reach Slack's Web API ({type(exc).__name__})",
                         fix="allow egress to slack.com:443 from the bot's namespace (NetworkPolicy, proxy)")
    header = next((v for k, v in (resp.headers or {}).items() if k.lower() == "x-oauth-scopes"), None)
    who = f"{resp.get('user', '?')} in {resp.get('team', '?')}"
    if header is None:
        return CheckLine("slack.bot-token", "warn", f"bot token valid ({who}); Slack did not say its scopes",
                         fix=f"check the app's scopes by hand: {', '.join(sorted(BOT_SCOPES))}")
    granted = {s.strip() for s in str(header).split(",") if s.strip()}
    missing = sorted(BOT_SCOPES - granted)
    if missing:
        return CheckLine("slack.bot-token", "fail",
                         f"bot token valid ({who}) but lacks scope(s): {', '.join(missing)}",
                         fix=_REINSTALL, details=tuple(missing))
    return CheckLine("slack.bot-token", "ok", f"bot token valid ({who}) with every scope gpubot needs")


async def _app_token(settings: Settings) -> CheckLine:
    client = AsyncWebClient(token=settings.slack_app_token.get(), base_url=settings.slack_api_url, timeout=TIMEOUT_S)
    try:
        await client.apps_connections_open(app_token=settings.slack_app_token.get())
    except SlackApiError as exc:
        return CheckLine("slack.app-token", "fail", f"Slack refuses the app-level token: {_error(exc)}",
                         fix=f"generate an app-level token with the scope {APP_TOKEN_SCOPE} (Basic Information "
                             "→ App-Level Tokens) into the Slack Secret (key app-token); Socket Mode must be on")
    except (OSError, TimeoutError) as exc:
        return CheckLine("slack.app-token", "unknown", f"cannot reach Slack's Web API ({type(exc).__name__})",
                         fix="allow egress to slack.com:443 from the bot's namespace (NetworkPolicy, proxy)")
    return CheckLine("slack.app-token", "ok", "app-level token valid: Socket Mode can connect")


async def check_slack(settings: Settings) -> list[CheckLine]:
    """The Slack lines; one ``skip`` when no Slack token is configured (the CLI alone)."""
    if not settings.slack_bot_token:
        return [CheckLine("slack", "skip", "Slack not configured (no slack_bot_token): the CLI works without it")]
    lines = [await _bot_token(settings)]
    if settings.slack_mode == "socket":
        if settings.slack_app_token:
            lines.append(await _app_token(settings))
        else:
            lines.append(CheckLine("slack.app-token", "fail",
                                   "Socket Mode without an app-level token (slack_app_token)",
                                   fix=f"generate one with the scope {APP_TOKEN_SCOPE} into the Slack Secret "
                                       "(key app-token), or set slack.mode: http"))
    elif not settings.slack_signing_secret:
        lines.append(CheckLine("slack.signing-secret", "fail", "HTTP mode without a signing secret: every request "
                               "from Slack is refused", fix="copy the Signing Secret (Basic Information) into the "
                               "Slack Secret (key signing-secret)"))
    else:
        lines.append(CheckLine("slack.signing-secret", "ok", "HTTP mode: signing secret set (only Slack's requests "
                               "can prove it right)"))
    return lines


def check_alerts(settings: Settings) -> CheckLine:
    """The Alertmanager receiver: its token is set when alerts are meant to be on."""
    if settings.alerts_token:
        return CheckLine("alerts", "ok",
                         f"Alertmanager receiver on (POST /alerts), posting to {settings.alerts_channel}")
    if settings.alerts_channel:
        return CheckLine("alerts", "fail", f"alerts_channel is {settings.alerts_channel} but no alerts_token: the "
                         "receiver is off and Alertmanager's posts are refused",
                         fix="create a Secret with the bearer token Alertmanager sends and name it in "
                             "alerts.existingSecret (GPUBOT_ALERTS_TOKEN_FILE)")
    return CheckLine("alerts", "skip", "Alertmanager receiver off (no alerts_token)")
