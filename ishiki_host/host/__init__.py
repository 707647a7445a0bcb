"""The composition root: ``Host`` (a config directory, running), its routes and runtimes, channels and their
supervision, the memory database, heartbeats, hot reload and the resumption of unfinished runtimes."""

from ishiki_host.host.host import PID_FILE, Host
from ishiki_host.host.routes import ProfileRoute, RouteTable
from ishiki_host.host.setup import ReloadReport

__all__ = ["PID_FILE", "Host", "ProfileRoute", "ReloadReport", "RouteTable"]
