"""Scaffolds for ``ishiki new``: plugin packages rendered from templates, and profiles from the schema.

``render_plugin(kind, name)`` gives the files of a ready package (``pyproject.toml`` with the entry point, the
plugin class with its config schema, a README and tests on the ``ishiki_host.testing`` fixtures);
``write_plugin`` writes them. ``render_profile`` lists every key of the profile schema with its comment;
``write_profile`` writes a profile directory into a config directory.
"""

from ishiki_host.scaffold._names import KINDS, PluginKind, PluginNames, name_problem, plugin_names
from ishiki_host.scaffold._plugin import host_requirement, render_plugin, write_plugin
from ishiki_host.scaffold._profile import CONSOLE_CLAIM, PROFILE_ID, render_persona, render_profile, write_profile

__all__ = [
    "CONSOLE_CLAIM",
    "KINDS",
    "PROFILE_ID",
    "PluginKind",
    "PluginNames",
    "host_requirement",
    "name_problem",
    "plugin_names",
    "render_persona",
    "render_plugin",
    "render_profile",
    "write_plugin",
    "write_profile",
]
