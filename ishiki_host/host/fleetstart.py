"""Whether a host starts as one of a fleet: ``store: postgresql://...`` opens its ``Fleet``, ``store: file`` none.

The fleet's parts talk to PostgreSQL through psycopg, the ``postgresql`` extra, which a host on the file store
need not have installed; so ``ishiki_host.host.fleet`` is imported here, when the config asks for it, and a
missing driver is said in one sentence with the command that installs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ishiki_host.errors import StoreError
from ishiki_host.store.pg.urls import is_postgres_url, safe_url

if TYPE_CHECKING:
    from ishiki_host.config.host import HostConfig
    from ishiki_host.core.clock import Clock
    from ishiki_host.host.fleet import Fleet

__all__ = ["open_fleet"]


async def open_fleet(config: HostConfig, clock: Clock) -> Fleet | None:
    """The host's ``Fleet`` when ``config.store`` is a PostgreSQL URL (``StoreError`` when the driver is
    missing, the server does not answer or its schema is newer); ``None`` on the file store."""
    if not is_postgres_url(config.store):
        return None
    try:
        fleet = importlib.import_module("ishiki_host.host.fleet")  # psycopg: the optional `postgresql` extra
    except ModuleNotFoundError as exc:
        raise StoreError(
            f"store: {safe_url(config.store)} needs the PostgreSQL driver ({exc.name} is not installed): "
            "pip install 'ishiki-host[postgresql]'"
        ) from None
    opened: Fleet = await fleet.Fleet.open(config.store, config.fleet, clock)
    return opened
