"""Import the official ``kubernetes`` client by the piece instead of whole.

Why: the client's package ``__init__`` files import everything eagerly: ``kubernetes`` imports
``client``, ``config``, ``dynamic`` (jsonschema, kubernetes_validate), ``stream`` (websocket-client),
``watch``, ``utils``, ``leaderelection`` and ``informer``; ``kubernetes.client`` imports every API
class and ``kubernetes.client.models`` every one of about 700 models. Any ``from
kubernetes.client.x import y`` runs all of them first, which cost a cold ``gpubot why-pending``
about 0.5 s of its start-up, though a diagnosis uses four API classes and no model.

``install`` (called once, by ``bot/__init__.py``, before any gpubot module can import the client)
puts those four packages in ``sys.modules`` as lazy packages: the same names, the same
``__path__``, and a module ``__getattr__`` (PEP 562) that imports the one submodule a name comes
from when the name is first used (``client.CoreV1Api`` imports ``kubernetes.client.api.core_v1_api``
only). The name-to-module map is read from the package's own ``__init__`` source (its generated
``from X import Y`` lines), so a client upgrade brings its own map; a name the map does not
explain runs the package's real ``__init__`` (everything, as before). This is still the official
client; only the order and moment of its imports change. Nothing here reads a cluster.

Three client modules (and urllib3's HTTP/2 switch) also import, at module level, what only a rare
path uses (``DEFERRED``):
the REST layer takes requests' proxy rule (asked only when a proxy is configured), the kubeconfig
loader takes requests-oauthlib and oauthlib (only to refresh an OIDC token), the API client takes
dateutil's parser and a thread pool (only for typed models and ``async_req``). Together they were
about 190 of the 690 modules a why-pending imported, ~70 ms of CPU in every cold command. While
such a module runs, those imports find stand-ins: a name taken from one is a function that
imports the real module on its first call. The stand-ins are gone from ``sys.modules`` when the
client module is done, so any later import is the real one.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import re
import sys
import threading
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: the client's packages whose ``__init__`` imports every submodule eagerly (outermost first)
LAZY_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.client.api", "kubernetes.client.models")

#: client module -> {module it imports for a rare path: the names it takes from that module}
DEFERRED: dict[str, dict[str, tuple[str, ...]]] = {
    # ``should_bypass_proxies`` is called only when the configuration has a proxy
    "kubernetes.client.rest": {"requests.utils": ("should_bypass_proxies",)},
    # ``OAuth2Session`` and ``oauthlib.oauth2``'s errors: only in the refresh of an OIDC token, and
    # requests-oauthlib imports ``oauthlib.oauth2`` for real before those errors can be looked up
    "kubernetes.config.kube_config": {"requests_oauthlib": ("OAuth2Session",), "oauthlib.oauth2": ()},
    # dateutil's parser: only to deserialise a date into a model (gpubot reads JSON); the thread
    # pool: only for ``async_req`` calls, which gpubot does not make
    "kubernetes.client.api_client": {"dateutil.parser": ("parse",), "multiprocessing.pool": ("ThreadPool",)},
    # urllib3 (the client's HTTP layer) asks importlib.metadata for h2's version only when HTTP/2 is
    # injected into it, which the client never does; importlib.metadata brings zipfile and more
    "urllib3.http2": {"importlib.metadata": ("version",)},
}

#: ``from X import A`` / ``from X import A, B`` on one line (the generated ``__init__`` files)
_FROM_IMPORT = re.compile(r"^from ([\w.]+) import ([\w, ]+)$", re.MULTILINE)
#: ``__version__ = "36.0.3"``
_CONSTANT = re.compile(r"^(__\w+__) = ['\"]([^'\"]*)['\"]$", re.MULTILINE)


#: held while a lazy package runs its real ``__init__`` (re-entrant: that code imports its own names)
_FALLBACK = threading.RLock()


class _LazyPackage(types.ModuleType):
    """A package whose ``__init__`` has not run; names are imported from their module on first use."""

    def _names(self) -> dict[str, str]:
        state: dict[str, Any] = self.__dict__["_lazy_state"]
        if state["names"] is None:  # read on first use: commands that never touch the client skip it
            state["names"] = _generated_names(self.__name__, str(self.__dict__["__file__"]))
        names: dict[str, str] = state["names"]
        return names

    def __dir__(self) -> list[str]:
        """The names the real package has, not only those used so far: ``dir(kubernetes.client)``
        is how ``gpubot doctor`` finds every API class (bot/doctor/kube_calls.py)."""
        return sorted(set(self.__dict__) | set(self._names()))

    def _lazy_attr(self, name: str) -> Any:
        state: dict[str, Any] = self.__dict__["_lazy_state"]
        source = self._names().get(name)
        if source is not None:
            if source.startswith("="):  # ``__version__ = "36.0.3"``
                setattr(self, name, source[1:])
                return source[1:]
            if source == self.__name__:  # ``from . import client``: the name is a submodule
                return importlib.import_module(f"{source}.{name}")
            value = getattr(importlib.import_module(source), name)
            setattr(self, name, value)
            return value
        folder = Path(self.__path__[0])
        if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
            return importlib.import_module(f"{self.__name__}.{name}")
        if name.startswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        with _FALLBACK:  # two threads asking at once: the real __init__ still runs once
            if not state["loaded"]:
                # a name the generated lines do not explain: run the real __init__ (everything)
                state["loaded"] = True
                self.__spec__.loader.exec_module(self)  # type: ignore[union-attr]
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


def _generated_names(package: str, origin: str) -> dict[str, str]:
    """Each name the package's ``__init__`` imports, with the module it comes from (the package
    itself for ``from . import x``: a submodule); {} where the file cannot be read or uses a form
    the generated files do not (every name then goes to the real ``__init__``)."""
    try:
        source = Path(origin).read_text(encoding="utf-8")
    except OSError:
        return {}
    names: dict[str, str] = {constant: f"={value}" for constant, value in _CONSTANT.findall(source)}
    for module, listed in _FROM_IMPORT.findall(source):
        if module == "__future__":
            continue
        if module.startswith(".") and module != ".":
            return {}
        target = package if module == "." else module
        for item in listed.split(","):
            if item.strip():
                names[item.strip()] = target
    return names


def _lazy_package(name: str, parent_path: Sequence[str] | None) -> _LazyPackage | None:
    """The lazy stand-in for package ``name``, or None where it cannot be made (not installed,
    not a plain source package)."""
    spec = importlib.machinery.PathFinder.find_spec(name, parent_path)
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return None
    if not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
        return None
    module = _LazyPackage(name)
    module.__dict__.update(
        __spec__=spec,
        __loader__=spec.loader,
        __file__=spec.origin,
        __path__=list(spec.submodule_search_locations),
        __package__=name,
        _lazy_state={"names": None, "loaded": False},
        __getattr__=module._lazy_attr,
    )
    return module


def _on_first_call(module: str, name: str) -> Callable[..., Any]:
    """A stand-in for function ``module.name`` that imports ``module`` when it is first called."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{module}.{name}, imported on its first call (bot.kube_import.DEFERRED)"
    return call


class _StandIn(types.ModuleType):
    """What ``import X`` and ``from X import name`` find while a ``DEFERRED`` client module runs."""

    def __init__(self, name: str, names: tuple[str, ...]) -> None:
        super().__init__(name)
        self.__spec__ = None  # the import system reads it to see whether a module is initialising
        for attr in names:
            setattr(self, attr, _on_first_call(name, attr))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # ``__path__`` and the like: what the import system asks of any module
            raise AttributeError(attr)
        # a name the stand-in does not defer: the client module needs the real one now
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


class _DeferringLoader:
    """Runs a client module with stand-ins for the modules ``DEFERRED`` names, then removes them.

    A plain class, as is the finder below: the import system asks only for these methods, and
    ``importlib.abc`` imports importlib.resources, tempfile, shutil and three compressors (about
    5 ms of every process's start-up) for base classes that add nothing here."""

    def __init__(self, loader: importlib.machinery.SourceFileLoader, deferred: dict[str, tuple[str, ...]]) -> None:
        self.loader = loader
        self.deferred = deferred

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, …: the real loader's
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        placed = {name: _StandIn(name, names) for name, names in self.deferred.items() if name not in sys.modules}
        sys.modules.update(placed)
        try:
            self.loader.exec_module(module)
        finally:
            for name, stand_in in placed.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]


class _DeferringFinder:
    """Finds the ``DEFERRED`` client modules as usual and gives them the deferring loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        deferred = DEFERRED.get(fullname)
        if deferred is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _DeferringLoader(spec.loader, deferred)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Put the client's eager packages in ``sys.modules`` as lazy ones (once; never when any of
    them is imported already, since the real package would then be half replaced), and defer the
    rare-path imports of ``DEFERRED``."""
    if not any(isinstance(finder, _DeferringFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DeferringFinder())
    if any(name in sys.modules for name in LAZY_PACKAGES):
        return
    made: dict[str, _LazyPackage] = {}
    for name in LAZY_PACKAGES:
        parent = name.rpartition(".")[0]
        package = _lazy_package(name, made[parent].__path__ if parent else None)
        if package is None:
            return  # not installed, or a layout this does not know: the plain imports still work
        made[name] = package
    for name, package in made.items():
        sys.modules[name] = package
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(made[parent], child, package)
