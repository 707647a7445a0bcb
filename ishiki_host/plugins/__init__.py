"""Plugins: the class-level contract (``base``), discovery (stevedore), extension hooks (pluggy) and
activation gating of a config directory.
"""

from ishiki_host.plugins.activation import ProfileState, activate, required_services
from ishiki_host.plugins.base import (
    Channel,
    ContextEngine,
    Extension,
    ModelAPI,
    Plugin,
    ToolcallEngine,
    WakeupEngine,
)
from ishiki_host.plugins.configdir import ConfigDir, load_config_dir
from ishiki_host.plugins.discovery import PluginRegistry, ServiceRecord, discover
from ishiki_host.plugins.hooks import IshikiPluginManager, await_results, call_hook, call_in_order, make_plugin_manager
from ishiki_host.plugins.hookspecs import hookimpl

__all__ = [
    "Channel",
    "ConfigDir",
    "ContextEngine",
    "Extension",
    "IshikiPluginManager",
    "ModelAPI",
    "Plugin",
    "PluginRegistry",
    "ProfileState",
    "ServiceRecord",
    "ToolcallEngine",
    "WakeupEngine",
    "activate",
    "await_results",
    "call_hook",
    "call_in_order",
    "discover",
    "hookimpl",
    "load_config_dir",
    "make_plugin_manager",
    "required_services",
]
