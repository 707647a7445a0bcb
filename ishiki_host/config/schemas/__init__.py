"""The JSON Schemas (draft 2020-12) of ``profile.yml``, ``models.yaml`` and ``ishiki.yaml``, shipped as files.

They are the one source of every default and every key's documentation: the loaders apply their defaults and
``docs/reference`` is generated from them. Custom keywords: ``x-placeholder`` names the key of a map in the
reference (``channels.<platform:selfId>``), ``x-error`` replaces the message of a failed ``pattern``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

__all__ = ["SCHEMA_NAMES", "load_schema"]

SchemaName = Literal["profile", "models", "host"]
SCHEMA_NAMES: tuple[SchemaName, ...] = ("profile", "models", "host")


@cache
def load_schema(name: SchemaName) -> dict[str, Any]:
    """The schema ``name`` (read once; callers must not mutate it)."""
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
