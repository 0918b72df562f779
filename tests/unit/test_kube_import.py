"""The official client, imported by the piece (``bot.kube_import``): same names, fewer imports.

Each check runs in a fresh interpreter: whether a module was imported is a fact about one process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: what the client's package ``__init__`` files imported eagerly, and a diagnosis never uses
NEVER_FOR_A_DIAGNOSIS = (
    "kubernetes.client.models.v1_pod",
    "kubernetes.client.api.apps_v1beta1_api",
    "kubernetes.dynamic",
    "kubernetes.stream",
    "kubernetes.leaderelection",
    "websocket",
    "jsonschema",
    # what the REST layer and the kubeconfig loader use only for a proxy or an OIDC refresh
    "requests",
    "requests_oauthlib",
    "oauthlib.oauth2",
    "dateutil.parser",
    "multiprocessing.pool",
    # urllib3's HTTP/2 switch (importlib.metadata), and what importlib.abc would bring
    "importlib.metadata",
    "importlib.resources",
)


def _run(script: str) -> object:
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_read_path_imports_only_the_client_pieces_it_uses(tmp_path: Path) -> None:
    """The clients a why-pending builds (reader, exec, kubeconfig loading) need none of the
    client's ~700 models, its dynamic client (jsonschema), its stream (websocket) or, until a
    request goes through the client itself, its generated API classes."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n",
        encoding="utf-8",
    )
    script = (
        "import json, sys\n"
        "from bot.probes.clients import KubeClients\n"
        "from bot.settings import ClusterConfig, load_settings\n"
        f"s = load_settings(env={{}}, clusters=(ClusterConfig(name='c', kubeconfig={str(kubeconfig)!r}),))\n"
        "clients = KubeClients(s).for_cluster('')\n"
        "assert clients.reader.server == 'http://127.0.0.1:9', clients.reader.server\n"
        f"never = sorted(m for m in {NEVER_FOR_A_DIAGNOSIS!r} if m in sys.modules)\n"
        # nor the generated API classes' modules: a method is imported when it is first called, and
        # over the kept connection none is (bot/probes/lazy_api.py)
        "apis = sorted(m for m in sys.modules if m.startswith('kubernetes.client.api.'))\n"
        "print(json.dumps([never, apis]))\n"
    )
    assert _run(script) == [[], []]


#: each public name of a module, as "its module:its qualified name" (the identity of a class or
#: function across two interpreters), or the type of a plain value
_DESCRIBE = (
    "def describe(mod):\n"
    "    out = {}\n"
    "    for n in NAMES.get(mod.__name__) or [n for n in vars(mod) if not n.startswith('_')]:\n"
    "        v = getattr(mod, n)\n"
    "        out[n] = (f\"{getattr(v, '__module__', '')}:{getattr(v, '__qualname__', '')}\""
    " if hasattr(v, '__qualname__') else getattr(v, '__name__', type(v).__name__))\n"
    "    return out\n"
)


def test_every_name_of_the_real_packages_is_there_and_the_same() -> None:
    """Whatever the real ``kubernetes``, ``kubernetes.client`` and its models export, the lazy
    stand-ins give the very same objects, and a model class deserialises through them."""
    packages = "('kubernetes', 'kubernetes.client', 'kubernetes.client.models', 'kubernetes.client.api')"
    real = _run(
        "import importlib, json\nNAMES = {}\n" + _DESCRIBE
        + f"print(json.dumps({{p: describe(importlib.import_module(p)) for p in {packages}}}))\n"
    )
    assert isinstance(real, dict) and len(real["kubernetes.client.models"]) > 500
    names = {module: sorted(found) for module, found in real.items()}
    lazy = _run(
        "import importlib, json, sys\nimport bot\n"
        "assert type(sys.modules['kubernetes.client']).__name__ == '_LazyPackage'\n"
        f"NAMES = {names!r}\n" + _DESCRIBE
        + f"got = {{p: describe(importlib.import_module(p)) for p in {packages}}}\n"
        "from kubernetes.client import ApiClient\n"
        "answer = type('R', (), {'data': json.dumps({'metadata': {'name': 'p'}})})()\n"
        "got['pod'] = ApiClient().deserialize(answer, 'V1Pod').metadata.name\n"
        "print(json.dumps(got))\n"
    )
    assert isinstance(lazy, dict) and lazy.pop("pod") == "p"
    assert lazy == real


def test_dir_lists_every_name_before_any_is_used() -> None:
    """``dir()`` of a lazy package is the real package's names, read from its ``__init__``, and
    imports nothing: ``gpubot doctor`` finds the API classes with it. It used to list only the
    names used so far, so test_rbac's scanner found no call when it ran first in its process."""
    real = _run(
        "import json, kubernetes.client as c\nprint(json.dumps(sorted(n for n in dir(c) if n.endswith('Api'))))"
    )
    lazy = _run(
        "import json, sys\nimport bot\nimport kubernetes.client as c\n"
        "names = sorted(n for n in dir(c) if n.endswith('Api'))\n"
        "print(json.dumps([names, 'kubernetes.client.api.core_v1_api' in sys.modules]))\n"
    )
    assert isinstance(real, list) and "CoreV1Api" in real
    assert lazy == [real, False]


def test_a_deferred_import_is_the_real_one_when_its_path_is_taken() -> None:
    """The proxy rule, the OIDC refresh, dates in models and the thread pool work through their
    stand-ins (``DEFERRED``), which import the real modules on first call, and a later ``import
    requests`` is the real package."""
    script = (
        "import json, sys\n"
        "import bot\n"
        "from kubernetes.client import Configuration, rest\n"
        "from kubernetes.config import kube_config\n"
        "import urllib3\n"
        "before = sorted(m for m in ('requests', 'requests_oauthlib', 'oauthlib.oauth2') if m in sys.modules)\n"
        "def pool(no_proxy):\n"
        "    c = Configuration(host='http://10.0.0.1:6443')\n"
        "    c.proxy, c.no_proxy = 'http://127.0.0.1:3128', no_proxy\n"
        "    return type(rest.RESTClientObject(c).pool_manager).__name__\n"
        "bypassed, proxied = pool('10.0.0.1'), pool('')\n"
        "session = kube_config.OAuth2Session(client_id='gpubot')\n"
        "from kubernetes.client import ApiClient\n"
        "api = ApiClient()\n"
        "answer = type('R', (), {'data': json.dumps({'creationTimestamp': '2026-12-03T10:00:00Z'})})()\n"
        "created = api.deserialize(answer, 'V1ObjectMeta').creation_timestamp.isoformat()\n"
        "pooled = api.pool.apply(lambda: 'pooled')\n"
        "api.close()\n"
        "from urllib3 import http2\n"
        "h2_check = (http2.version('urllib3') == urllib3.__version__, 'importlib.metadata' in sys.modules)\n"
        "import requests, requests_oauthlib\n"
        "error = kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError\n"
        "print(json.dumps([before, bypassed, proxied, isinstance(session, requests_oauthlib.OAuth2Session),\n"
        "                  requests.utils.should_bypass_proxies.__module__, error.__name__,\n"
        "                  type(sys.modules['requests']).__name__, created, pooled, h2_check]))\n"
    )
    assert _run(script) == [
        [], "PoolManager", "ProxyManager", True, "requests.utils", "InvalidClientIdError", "module",
        "2026-12-03T10:00:00+00:00", "pooled", [True, True],
    ]
