"""The ``dashboard`` host plugin: the dashboard's routes on ``/dashboard`` of the host's HTTP server.

``DashboardPlugin`` is what the entry point names; each start of the plugin is one ``DashboardServer``,
which mounts ``/dashboard``, decides the login token (the configured one, or one made for this start and
told to the operator once), refuses to serve beyond the loopback interface without a configured token,
registers every page and serves until the host cancels it.
"""

from __future__ import annotations

import ipaddress
import secrets
import sys
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
from ishiki_host import HostPlugin
from ishiki_host.errors import HostPluginError

from ishiki_dashboard import login, pages
from ishiki_dashboard.app import Dashboard

if TYPE_CHECKING:
    from anyio.abc import TaskStatus
    from ishiki_host import HostPluginContext, PluginConfig

__all__ = ["DashboardPlugin", "DashboardServer", "check_exposure", "is_loopback", "listen_address"]


class DashboardPlugin(HostPlugin):
    """The web dashboard (see ``docs/dashboard.md``)."""

    api_version: ClassVar[str] = "1.0"
    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "token": {
                "type": "string",
                "minLength": 1,
                "description": "The login token (write ${DASHBOARD_TOKEN}); without it one is made at each start "
                "and logged once. Required when the host listens beyond the loopback interface.",
            },
            "user": {
                "type": "string",
                "minLength": 1,
                "default": "admin",
                "description": "The name admin actions are logged under and the web chat speaks as.",
            },
            "session_hours": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 12,
                "description": "How long a login lasts.",
            },
            "login_attempts_per_minute": {
                "type": "integer",
                "minimum": 1,
                "default": 5,
                "description": "Wrong tokens a client address may send in a minute before it gets 429.",
            },
            "log_lines": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2000,
                "default": 500,
                "description": "How many of the host's recent log lines the logs page shows.",
            },
        },
    }

    def create(self, ctx: HostPluginContext, config: PluginConfig) -> DashboardServer:
        """One life of the dashboard; ``config`` is ``plugins.dashboard`` with defaults."""
        return DashboardServer(ctx, config)


def is_loopback(address: str) -> bool:
    """Whether ``address`` (``host:port``, ``[v6]:port``, or a URL) is on the loopback interface
    (``127.0.0.1``, ``[::1]``, ``localhost``); ``0.0.0.0`` and ``[::]`` (every interface) are not."""
    host = urllib.parse.urlsplit(address if "//" in address else f"//{address}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen_address(ctx: HostPluginContext) -> str | None:
    """The address the host's HTTP server was told to listen on (``http.listen``: ``0.0.0.0:8080`` stays that,
    where ``mount.local_url`` names ``127.0.0.1``), from the host's report."""
    http = ctx.status().get("http")
    listen = http.get("listen") if isinstance(http, Mapping) else None
    return listen if isinstance(listen, str) else None


def check_exposure(address: str | None, token: str | None) -> None:
    """``HostPluginError`` (fatal) when the dashboard would listen on ``address`` beyond the loopback interface
    without a configured token: a generated one is told on a console that people on the network cannot see,
    but anyone there could try tokens."""
    if token is None and address is not None and not is_loopback(address):
        raise HostPluginError(
            f"the dashboard would serve {address}, beyond the loopback interface, without a token: "
            "set plugins.dashboard.token in ishiki.yaml (e.g. ${DASHBOARD_TOKEN}) or listen on 127.0.0.1"
        )


class DashboardServer:
    """One life of the dashboard: the host makes a new one for each (re)start."""

    def __init__(self, ctx: HostPluginContext, config: Mapping[str, Any]):
        self.ctx = ctx
        self.config = config
        self.dashboard: Dashboard | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Mount ``/dashboard``, check the exposure, register the pages, report ready, serve until cancelled."""
        async with self.ctx.http_mount() as mount:
            configured = self.config.get("token")
            check_exposure(listen_address(self.ctx) or mount.local_url, configured)
            token = configured or secrets.token_urlsafe(24)
            self.dashboard = dash = Dashboard(self.ctx, {**self.config, "token": token}, mount)
            login.register(dash)
            pages.register_all(dash)
            if configured is None:
                self._tell_token(f"{mount.local_url or mount.prefix}/login", token)
            task_status.started()
            await anyio.sleep_forever()

    def _tell_token(self, login_url: str, token: str) -> None:
        """The generated token, once on stderr for the operator at the console. The log gets a line without
        it: logs are shipped and kept (``log_format: json``), and the logs page shows them."""
        print(f"dashboard: log in at {login_url} with token {token}", file=sys.stderr, flush=True)
        self.ctx.logger.warning("dashboard: log in at %s with the token printed on stderr at start", login_url)
