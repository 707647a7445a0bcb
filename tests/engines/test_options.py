"""``resolve_options``: a config found valid for a schema is remembered; a bad one is refused every time."""

from __future__ import annotations

import pytest

from ishiki_host.engines._options import resolve_options
from ishiki_host.errors import ConfigError

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "limit": {"type": "integer", "minimum": 1, "default": 4},
        "names": {"type": "array", "items": {"type": "string"}, "default": []},
    },
}


def test_a_remembered_valid_config_comes_back_with_fresh_defaults() -> None:
    first = resolve_options(SCHEMA, {"limit": 2})
    first["names"].append("changed by its engine")
    assert resolve_options(SCHEMA, {"limit": 2}) == {"limit": 2, "names": []}
    assert resolve_options(SCHEMA, {"limit": 2}) is not first


def test_a_bad_config_is_refused_each_time_even_after_good_ones() -> None:
    resolve_options(SCHEMA, {"limit": 3})
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"engine\.limit"):
            resolve_options(SCHEMA, {"limit": 0}, where="engine")
        with pytest.raises(ConfigError, match=r'unknown option "limits" \(did you mean "limit"\?\)'):
            resolve_options(SCHEMA, {"limits": 3})


def test_the_same_config_is_checked_against_each_schema() -> None:
    other = {**SCHEMA, "properties": {"limit": {"type": "string"}}}
    resolve_options(SCHEMA, {"limit": 5})
    with pytest.raises(ConfigError, match="is invalid"):
        resolve_options(other, {"limit": 5})
