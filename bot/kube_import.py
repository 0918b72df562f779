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
"""

from __future__ import annotations

import importlib
import importlib.machinery
import re
import sys
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: the client's packages whose ``__init__`` imports every submodule eagerly (outermost first)
LAZY_PACKAGES = ("kubernetes", "kubernetes.client", "kubernetes.client.api", "kubernetes.client.models")

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


def install() -> None:
    """Put the client's eager packages in ``sys.modules`` as lazy ones (once; never when any of
    them is imported already, since the real package would then be half replaced)."""
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
