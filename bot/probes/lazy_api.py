"""The official client's API classes, each imported and built when one of its methods is called.

Why: the reader names every request by a client method (``self._core.list_node``): the method
is the fallback that sends it where the kept connection cannot (a proxy, impersonation), its name
labels the request in ``ReadStats`` and its RBAC is derived from the source (``bot.doctor``).
But where the kept connection sends every request, the method is never called, and building the
API objects imported their generated modules: ``core_v1_api`` alone is 36,000 lines, and the four
cost every cold command ~6 ms of bytecode loading before its first read.

``LazyApi(api_client, "CoreV1Api").list_node`` is a ``ClientMethod``: callable like the client's
bound method (it imports and builds the API object on its first call) and named like it.
"""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import client


class LazyApi:
    """One API class of the official client (``CoreV1Api``…) for ``api_client``, built on first use."""

    __slots__ = ("_api", "_client", "_lock", "name")

    def __init__(self, api_client: client.ApiClient, name: str) -> None:
        self._client = api_client
        self.name = name
        self._api: Any = None
        self._lock = threading.Lock()

    def built(self) -> Any:
        """The API object (imported and built the first time; reading threads may ask at once)."""
        if self._api is None:
            with self._lock:
                if self._api is None:
                    self._api = getattr(client, self.name)(self._client)
        return self._api

    def __getattr__(self, method: str) -> ClientMethod:
        if method.startswith("_"):
            raise AttributeError(method)
        return ClientMethod(self, method)


class ClientMethod:
    """A method of a ``LazyApi``: called, it calls the client's bound method of that name."""

    __slots__ = ("__name__", "api")

    def __init__(self, api: LazyApi, name: str) -> None:
        self.api = api
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.api.built(), self.__name__)(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.api.name}.{self.__name__}"
