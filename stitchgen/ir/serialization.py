"""The IR as JSON-compatible data: :func:`to_json`, :func:`from_json`
(what an artifact stores; the lifted objects travel beside it)."""

from __future__ import annotations

import base64
import dataclasses
import math
from typing import Any

from . import CLASSES, Literal, Program


def _literal_to_json(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return {"int": str(value)}
    if kind is float:
        return {"float": repr(value)}
    if kind is complex:
        return {"complex": [repr(value.real), repr(value.imag)]}
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if value is Ellipsis:
        return {"ellipsis": True}
    raise TypeError(f"not a literal: {value!r}")


def _float(text: str) -> float:
    value = float(text)
    return math.nan if math.isnan(value) else value


def _literal_from_json(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    ((kind, payload),) = data.items()
    if kind == "int":
        return int(payload)
    if kind == "float":
        return _float(payload)
    if kind == "complex":
        return complex(_float(payload[0]), _float(payload[1]))
    if kind == "bytes":
        return base64.b64decode(payload)
    if kind == "ellipsis":
        return Ellipsis
    raise ValueError(f"unknown literal encoding {kind!r}")


def to_json(node: Any) -> Any:
    """Encode an IR object as JSON-compatible data (lifted objects excluded)."""
    if isinstance(node, Literal):
        return {"_type": "Literal", "value": _literal_to_json(node.value)}
    if dataclasses.is_dataclass(node):
        out: dict[str, Any] = {"_type": type(node).__name__}
        for f in dataclasses.fields(node):
            if f.compare:
                out[f.name] = to_json(getattr(node, f.name))
        return out
    if isinstance(node, tuple):
        return [to_json(item) for item in node]
    if node is None or isinstance(node, (str, int)):
        return node
    raise TypeError(f"cannot encode {type(node).__name__} in IR JSON")


def from_json(data: Any, const_values: tuple[Any, ...] = ()) -> Any:
    """Decode :func:`to_json` output; ``const_values`` is re-attached to a Program."""
    if isinstance(data, list):
        return tuple(from_json(item) for item in data)
    if not isinstance(data, dict):
        return data
    cls = CLASSES.get(data.get("_type", ""))
    if cls is None:
        raise ValueError(f"unknown IR node type {data.get('_type')!r}")
    if cls is Literal:
        return Literal(_literal_from_json(data["value"]))
    kwargs = {k: from_json(v) for k, v in data.items() if k != "_type"}
    if cls is Program:
        declared = len(kwargs["consts"])
        if len(const_values) != declared:
            raise ValueError(f"program declares {declared} constants, got {len(const_values)}")
        kwargs["const_values"] = tuple(const_values)
    return cls(**kwargs)
