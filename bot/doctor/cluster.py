"""The API server answers, and gpubot's state CRDs are installed (``state: kubernetes``).

Both through discovery, which every authenticated identity may read (``system:discovery``): the
CRD check needs no permission on CustomResourceDefinitions, only the group's resource list.
"""

from __future__ import annotations

import asyncio

import orjson
from kubernetes.client import ApiClient, CustomObjectsApi, VersionApi
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from bot.doctor.result import CheckLine
from bot.state.kube import GROUP, PLURALS, VERSION

#: every plural the state code reads and writes
STATE_PLURALS = PLURALS
_CRD_FIX = ("kubectl apply -f the chart's crds/gpubot.dev.yaml (helm installs crds/ on install only, never on "
            "upgrade), or set config.state: sqlite")


def _server(api: ApiClient) -> str:
    return str(api.configuration.host)


async def check_api(api: ApiClient, *, timeout: float) -> CheckLine:
    """``GET /version``: the server answers this identity at all."""

    def get() -> dict[str, object]:
        resp = VersionApi(api).get_code(_preload_content=False, _request_timeout=timeout)
        return dict(orjson.loads(resp.data))

    try:
        info = await asyncio.to_thread(get)
    except ApiException as exc:
        if exc.status == 401:
            return CheckLine("api", "unknown", f"{_server(api)} refuses the bot's credentials (401)",
                             fix="the token expired or is wrong: refresh the kubeconfig, or check the service account")
        return CheckLine("api", "unknown", f"{_server(api)} answered {exc.status} {exc.reason} to GET /version",
                         fix="check the API server's health (kubectl get --raw /readyz)")
    except (HTTPError, OSError, orjson.JSONDecodeError) as exc:
        return CheckLine("api", "unknown", f"cannot reach the API server at {_server(api)} ({type(exc).__name__})",
                         fix="check the kubeconfig and context (--context), or the network path to the API server")
    return CheckLine("api", "ok", f"API server {_server(api)} answers (Kubernetes {info.get('gitVersion', '?')})")


async def check_crds(api: ApiClient, *, timeout: float) -> CheckLine:
    """The gpubot.dev group serves every kind the state code uses."""

    def get() -> set[str]:
        resp = CustomObjectsApi(api).get_api_resources(GROUP, VERSION, _preload_content=False,
                                                       _request_timeout=timeout)
        return {str(r.get("name", "")) for r in orjson.loads(resp.data).get("resources") or []}

    try:
        served = await asyncio.to_thread(get)
    except ApiException as exc:
        if exc.status == 404:
            return CheckLine("crds", "fail", f"the {GROUP} CRDs are not installed: state: kubernetes cannot work",
                             fix=_CRD_FIX)
        return CheckLine("crds", "unknown", f"cannot read {GROUP}/{VERSION} discovery ({exc.status} {exc.reason})",
                         fix="rerun when the API server answers")
    except (HTTPError, OSError, orjson.JSONDecodeError) as exc:
        return CheckLine("crds", "unknown", f"cannot read {GROUP}/{VERSION} discovery ({type(exc).__name__})",
                         fix="rerun when the API server answers")
    missing = [p for p in STATE_PLURALS if p not in served]
    if missing:
        return CheckLine("crds", "fail", f"{GROUP}/{VERSION} lacks {', '.join(missing)}: an older chart's CRDs?",
                         fix=_CRD_FIX, details=tuple(missing))
    return CheckLine("crds", "ok", f"state CRDs installed: {', '.join(STATE_PLURALS)}")
