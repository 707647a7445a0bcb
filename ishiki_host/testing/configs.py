"""``plugin_config``: a plugin's config as the host hands it to ``create``, for plugin tests.

The host validates a service's config block against the class's ``config_schema`` (unknown keys are errors with
a "did you mean" hint) and fills in the schema's defaults before ``create`` sees it. Tests call ``create`` with
``plugin_config(MyPlugin, {...})`` to get exactly that, and assert the errors a person would see::

    engine = MyEngine().create(runtime, plugin_config(MyEngine, {"max_messages": 10}))
    with pytest.raises(ConfigError, match="did you mean 'max_messages'"):
        plugin_config(MyEngine, {"max_mesages": 10})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ishiki_host.config.validation import compiled, schema_errors, with_defaults
from ishiki_host.config.yamlio import YamlDocument
from ishiki_host.errors import ConfigError
from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.plugins.base import ModelAPI, Plugin

__all__ = ["plugin_config"]


def plugin_config(
    plugin: type[Plugin] | type[ModelAPI], config: Mapping[str, Json] | None = None, *, where: str = "config"
) -> dict[str, Json]:
    """``config`` (default: empty) validated against ``plugin.config_schema``, with the schema's defaults.

    Raises ``ConfigError`` whose message lists every problem as ``<where>.<key path>: <message>``, worded as
    ``ishiki check`` words them.
    """
    schema: Mapping[str, Json] = plugin.config_schema
    data = dict(config or {})
    problems = schema_errors(compiled(schema), data, YamlDocument(where, data), ConfigError, (where,))
    if problems:
        raise ConfigError("; ".join(f"{p.path}: {p.message}" for p in problems), path=problems[0].path)
    result: dict[str, Json] = with_defaults(schema, data)
    return result
