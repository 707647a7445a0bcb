"""Strict JSON reading for what models answer: no duplicate keys, no ``NaN``/``Infinity``.

``json.loads`` quietly keeps the last of two equal keys and accepts ``NaN``; a model's answer with either is
malformed, and reading it as if it were fine would hide that. Callers classify the ``ValueError``.
"""

from __future__ import annotations

import json
from typing import Any

from ishiki_host.jsontypes import Json

__all__ = ["loads_strict"]


def loads_strict(text: str) -> Json:
    """``json.loads(text)``, raising ``ValueError`` on a duplicate key or a non-finite constant as well."""
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)


def _no_duplicates(pairs: list[tuple[str, Json]]) -> dict[str, Json]:
    keys = [key for key, _ in pairs]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise ValueError(f"duplicate keys {duplicated}")
    return dict(pairs)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
