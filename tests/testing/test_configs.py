"""``plugin_config``: a plugin's config validated and completed as the host does before ``create``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from ishiki_host.engines.wakeup.standard import StandardWakeupEngine
from ishiki_host.errors import ConfigError
from ishiki_host.gateway.providers.scripted import ScriptedAPI
from ishiki_host.plugins.base import Extension
from ishiki_host.testing import plugin_config


class Nested(Extension):
    """An extension with nested defaults."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "limits": {
                "type": "object",
                "default": {},
                "additionalProperties": False,
                "properties": {"count": {"type": "integer", "minimum": 1, "default": 3}},
            },
        },
    }

    def create(self, ctx: Any, config: Mapping[str, Any]) -> object:
        return object()


def test_defaults_are_filled_in_recursively() -> None:
    assert plugin_config(Nested, {"name": "x"}) == {"name": "x", "limits": {"count": 3}}
    assert plugin_config(Nested, {"name": "x", "limits": {"count": 9}})["limits"] == {"count": 9}


def test_the_given_mapping_is_not_changed() -> None:
    given = {"name": "x"}
    plugin_config(Nested, given)
    assert given == {"name": "x"}


def test_every_problem_is_named_with_its_path() -> None:
    with pytest.raises(ConfigError) as failure:
        plugin_config(Nested, {"limits": {"count": 0, "cuont": 1}}, where="extends.nested.config")
    message = failure.value.message
    assert "extends.nested.config: missing required key 'name'" in message
    assert "extends.nested.config.limits.count: must be >= 1; got 0" in message
    assert "extends.nested.config.limits.cuont: unknown key 'cuont'; did you mean 'count'?" in message


def test_built_in_engines_and_model_apis_work_too() -> None:
    assert plugin_config(StandardWakeupEngine)["direct"] is True
    with pytest.raises(ConfigError, match="unknown key 'rule'; did you mean 'rules'"):
        plugin_config(ScriptedAPI, {"rule": []})
