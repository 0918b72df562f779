"""Scenario includes: a file names a ``base:`` and states only what differs from it.

Many scenarios share a cluster (the same Nodes, Namespaces and system pods, the same node facts)
and differ in one workload. Instead of copying those objects, a scenario says::

    scenario: nvml-unknown-error
    base: bases/tce-qgpu-v100-demo.yaml     # relative to this file; a base may name its own base
    remove:                                 # base objects this scenario does not have
      - {kind: Pod, namespace: ai, name: gpu-demo-6c9f7d-tx2lq}
    kubernetes:
      objects: [...]                        # pasted kubectl output, as in any scenario
    containers: {...}
    expect: [...]

How the including file (the "overlay") is laid over its resolved base:

- ``kubernetes.objects`` merge by identity: ``kind`` + ``metadata.namespace`` + ``metadata.name``
  (the apiVersion group and version are not part of it). An overlay object whose identity the
  base has replaces that object whole and in its place; objects are never merged field by field,
  so a pasted ``kubectl get -o yaml`` object is served exactly as pasted. Other overlay objects
  are appended in file order. ``kind: List`` documents (in ``objects``, or as ``kubernetes``
  itself) are unwrapped first, in either file.
- ``remove:`` lists ``{kind, name, namespace?}`` and drops those base objects before the overlay's
  objects are added. Naming an object the base does not have is an error, so a typo is not
  silently ignored; ``namespace`` is required for namespaced objects.
- ``kubernetes.version``: the overlay's when it states one, else the base's.
- ``nodes`` and ``containers`` merge per key (node name, ``namespace/pod/container``). A key only
  one side has is kept; a key both have is deep-merged: mappings merge key by key, lists and
  scalars are replaced whole (``gpus``, ``processes``, ``dev_nvidia``), and a key set to null is
  removed (``checkpoint: null``: no checkpoint file; a node or container set to null is dropped).
  ``torch`` is one value and is replaced whole, because its ``cuda: null`` means a CPU-only build.
- ``api.faults`` merge per key: a fault with the same ``match`` and ``verb`` replaces the base's,
  others are appended (``rate: 0`` switches an inherited fault off).
- ``scenario``, ``summary``, ``expect`` and ``source`` are never inherited: each file states its
  own. Anything else in a base is ignored, so a base may be a fragment (no ``scenario`` or
  ``expect``) or a whole scenario. Shared fragments live in ``scenarios/bases/``.

The result is an ordinary scenario mapping; the loader validates it as if it had been one file.
Problems are reported as ``FILE: where: what``, naming the file that has them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.errors import ScenarioError
from bot.yamlio.marks import YamlInputError, load_yaml

#: the top-level keys a base passes on; everything else belongs to the file that states it
INHERITED = ("kubernetes", "nodes", "containers", "api")
#: container and node facts that are one value even though they are mappings
_LEAF_FACTS = ("torch",)

Identity = tuple[str, str, str]


#: parsed scenario files by (path, mtime, size): the test suite loads each of ~130 scenarios
#: several times (its parameter lists, the simulators, the expectations), and parsing with line
#: marks costs twenty times the copy each caller gets
_PARSED: dict[tuple[str, int, int], Any] = {}


def _plain_copy(value: Any) -> Any:
    """A copy of parsed YAML (mappings, lists and immutable scalars) that callers may change."""
    if type(value) is dict:
        return {k: _plain_copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_plain_copy(v) for v in value]
    return value


def read_yaml(path: Path) -> Any:
    """Parse one scenario file; ScenarioError names the file and, for bad YAML, the line."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key in _PARSED:
            return _plain_copy(_PARSED[key])
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not UTF-8 text") from None
    try:
        parsed = load_yaml(text)
    except YamlInputError as exc:
        where = f"line {exc.line}" if exc.line else "yaml"
        raise ScenarioError(f"{path}: {where}: not valid YAML: {exc.message}") from None
    _PARSED[key] = parsed
    return _plain_copy(parsed)


def object_problems(obj: Any) -> list[str]:
    """Why ``obj`` is not a Kubernetes object the simulator can serve (empty when it is one)."""
    if not isinstance(obj, dict):
        return ["must be a mapping (a Kubernetes object)"]
    out = [f"missing {key}" for key in ("apiVersion", "kind") if not isinstance(obj.get(key), str)]
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        out.append("missing metadata.name")
    if isinstance(meta, dict):
        if meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
            out.append("metadata.namespace: must be a string")
        for key in ("labels", "annotations"):
            values = meta.get(key)
            if values is not None and (
                not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values())
            ):
                out.append(f"metadata.{key}: must be a mapping of strings")
    for key in ("spec", "status"):
        if obj.get(key) is not None and not isinstance(obj[key], dict):
            out.append(f"{key}: must be a mapping")
    return out


def flatten_lists(items: list[Any]) -> list[Any]:
    """Accept ``kind: List`` documents (kubectl -o yaml) anywhere in the object list."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and item.get("kind") == "List" and isinstance(item.get("items"), list):
            out.extend(flatten_lists(item["items"]))
        else:
            out.append(item)
    return out


def raw_objects(kube: dict[str, Any]) -> Any:
    """The object list of a ``kubernetes`` mapping, before flattening: ``objects``, or a List's items."""
    objects = kube.get("objects")
    if objects is None and isinstance(kube.get("items"), list):
        objects = kube["items"]
    if isinstance(objects, dict) and objects.get("kind") == "List":
        objects = objects.get("items")
    return objects


def resolve_base(path: Path, data: Any) -> Any:
    """``data`` (the parsed file at ``path``) with its ``base:`` chain merged in.

    A file without ``base:`` comes back unchanged, so plain scenarios load exactly as before.
    """
    if not isinstance(data, dict) or ("base" not in data and "remove" not in data):
        return data
    return _resolve(path, data, chain=[path.resolve()])


def _resolve(path: Path, data: dict[str, Any], chain: list[Path]) -> dict[str, Any]:
    if "base" not in data:
        raise ScenarioError(f"{path}: remove: needs a base to remove objects from")
    ref = data["base"]
    if not isinstance(ref, str) or not ref.strip():
        raise ScenarioError(f"{path}: base: must be the path of another scenario file, relative to this one")
    target = path.parent / ref
    key = target.resolve()
    if key in chain:
        loop = " -> ".join(p.name for p in [*chain, key])
        raise ScenarioError(f"{path}: base: {ref} makes a cycle ({loop})")
    if not target.is_file():
        why = "is not a file" if target.exists() else "no such file"
        raise ScenarioError(f"{path}: base: cannot read {ref}: {why} ({target})")
    base = read_yaml(target)
    if not isinstance(base, dict):
        raise ScenarioError(f"{target}: top level: a base must be a mapping (kubernetes, nodes, containers)")
    if "base" in base or "remove" in base:
        base = _resolve(target, base, [*chain, key])
    return _overlay(target, base, path, data)


def _overlay(base_path: Path, base: dict[str, Any], path: Path, data: dict[str, Any]) -> dict[str, Any]:
    problems: list[str] = []
    base_kube = _kube(base_path, base, problems)
    kube = _kube(path, data, problems)
    base_objects = _objects(base_path, base_kube, problems)
    objects = _objects(path, kube, problems)
    for section in ("nodes", "containers", "api"):
        if base.get(section) is not None and not isinstance(base[section], dict):
            problems.append(f"{base_path}: {section}: must be a mapping")
    if problems:
        raise ScenarioError("\n".join(problems))

    merged = {k: v for k, v in data.items() if k not in ("base", "remove", *INHERITED)}
    out_objects = _remove(path, data.get("remove"), base_objects or [], problems)
    if problems:
        raise ScenarioError("\n".join(problems))
    index = {_identity(obj): i for i, obj in enumerate(out_objects)}
    for obj in objects or []:
        ident = _identity(obj)
        if ident in index:
            out_objects[index[ident]] = obj
        else:
            index[ident] = len(out_objects)
            out_objects.append(obj)

    if base_kube is not None or kube is not None:
        out_kube: dict[str, Any] = {}
        version = (kube or {}).get("version") or (base_kube or {}).get("version")
        if version:
            out_kube["version"] = version
        if base_objects is not None or objects is not None:
            out_kube["objects"] = out_objects
        merged["kubernetes"] = out_kube
    for section in ("nodes", "containers"):
        if section in base or section in data:
            merged[section] = _merge_keyed(base.get(section), data.get(section))
    if "api" in base or "api" in data:
        merged["api"] = _merge_api(base.get("api"), data.get("api"))
    return merged


def _kube(path: Path, data: dict[str, Any], problems: list[str]) -> dict[str, Any] | None:
    kube = data.get("kubernetes")
    if kube is None:
        return None
    if not isinstance(kube, dict):
        problems.append(f"{path}: kubernetes: must be a mapping (version, objects)")
        return None
    return kube


def _objects(path: Path, kube: dict[str, Any] | None, problems: list[str]) -> list[dict[str, Any]] | None:
    if kube is None:
        return None
    raw = raw_objects(kube)
    if raw is None:
        return None
    if not isinstance(raw, list):
        problems.append(f"{path}: kubernetes.objects: not a list")
        return None
    objects = flatten_lists(raw)
    for i, obj in enumerate(objects):
        problems += [f"{path}: kubernetes.objects[{i}]: {what}" for what in object_problems(obj)]
    return objects


def _identity(obj: dict[str, Any]) -> Identity:
    meta = obj["metadata"]
    return (str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))


def _remove(path: Path, raw: Any, objects: list[dict[str, Any]], problems: list[str]) -> list[dict[str, Any]]:
    """The base objects left after the overlay's ``remove:`` list."""
    if raw is None:
        return list(objects)
    if not isinstance(raw, list):
        problems.append(f"{path}: remove: must be a list of {{kind, name, namespace}}")
        return list(objects)
    present = {_identity(obj) for obj in objects}
    drop: set[Identity] = set()
    for i, item in enumerate(raw):
        where = f"{path}: remove[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not isinstance(item.get("name"), str):
            problems.append(f"{where}: must be a mapping with kind and name (and namespace for namespaced objects)")
            continue
        ident = (item["kind"], str(item.get("namespace") or ""), item["name"])
        if ident not in present:
            elsewhere = sorted(f"{ns}/{name}" for kind, ns, name in present if kind == ident[0] and name == ident[2])
            hint = f" (it has {', '.join(elsewhere)}: give the namespace)" if elsewhere else ""
            label = f"{ident[1]}/{ident[2]}" if ident[1] else ident[2]
            problems.append(f"{where}: the base has no {ident[0]} {label}{hint}")
            continue
        drop.add(ident)
    return [obj for obj in objects if _identity(obj) not in drop]


def _merge_keyed(base: Any, over: Any) -> Any:
    """``nodes`` / ``containers``: per key, deep-merged; anything not a mapping is left to the loader."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over if over is not None else base
    out = dict(base)
    for key, facts in over.items():
        if facts is None:
            out.pop(key, None)
        elif isinstance(out.get(key), dict) and isinstance(facts, dict):
            out[key] = _merge_facts(out[key], facts)
        else:
            out[key] = facts
    return out


def _merge_facts(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif key in _LEAF_FACTS:
            out[key] = value
        else:
            out[key] = deep_merge(out[key], value) if key in out else value
    return out


def deep_merge(base: Any, over: Any) -> Any:
    """Mappings merge key by key (a null value removes the key); anything else is replaced whole."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = deep_merge(out[key], value) if key in out else value
    return out


def _merge_api(base: Any, over: Any) -> Any:
    """``api``: mappings merged; ``faults`` keyed by (match, verb), the overlay's replacing the base's."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over if over is not None else base
    out = deep_merge({k: v for k, v in base.items() if k != "faults"}, {k: v for k, v in over.items() if k != "faults"})
    base_faults, faults = base.get("faults"), over.get("faults")
    if not isinstance(base_faults, list) or not isinstance(faults, list):
        chosen = faults if faults is not None else base_faults
        if chosen is not None:
            out["faults"] = chosen
        return out
    merged = list(base_faults)
    index = {_fault_key(f): i for i, f in enumerate(merged) if isinstance(f, dict)}
    for fault in faults:
        key = _fault_key(fault) if isinstance(fault, dict) else None
        if key is not None and key in index:
            merged[index[key]] = fault
        else:
            if key is not None:
                index[key] = len(merged)
            merged.append(fault)
    out["faults"] = merged
    return out


def _fault_key(fault: dict[str, Any]) -> tuple[str, str]:
    verb = fault.get("verb")
    return (str(fault.get("match", "")), str(verb).upper() if verb else "")
