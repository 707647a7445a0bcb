"""Ishiki's web dashboard, a host plugin (entry point ``ishiki.host.dashboard``) served at ``/dashboard``.

See ``docs/dashboard.md``. ``DashboardPlugin`` is the plugin; ``Dashboard`` (``ishiki_dashboard.app``) is what
page modules register their routes on; ``WebChannel`` (entry point ``ishiki.channel.web``) is the channel of
the dashboard's chat page.
"""

from ishiki_dashboard.app import Dashboard, DashRequest, Problem, json_response, redirect
from ishiki_dashboard.plugin import DashboardPlugin, DashboardServer
from ishiki_dashboard.webchat.channel import WebChannel

__all__ = [
    "DashRequest",
    "Dashboard",
    "DashboardPlugin",
    "DashboardServer",
    "Problem",
    "WebChannel",
    "json_response",
    "redirect",
]
