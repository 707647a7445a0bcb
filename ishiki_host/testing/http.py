"""``serve_http()``: the host's HTTP server on a free loopback port, for tests of webhook channels::

    async with serve_http() as ingress:
        host = FakeChannelHost(tmp_path, http=ingress, http_prefix="/hooks/whatsapp/0")
        ...                                   # the connection mounts its routes; post to its local_url

It is the real server (``ishiki_host.ingress.HttpIngress``), so caps, deadlines and answers are the host's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from ishiki_host.config.host import HttpSettings
from ishiki_host.ingress import HttpIngress

__all__ = ["serve_http"]


@asynccontextmanager
async def serve_http(
    *,
    public_url: str | None = None,
    max_body_bytes: int = 1_048_576,
    deadline_seconds: float = 30.0,
    max_connections: int = 100,
) -> AsyncIterator[HttpIngress]:
    """A running ingress on ``127.0.0.1`` and a free port (its ``base_url``), stopped on leaving."""
    settings = HttpSettings(("127.0.0.1", 0), public_url, max_body_bytes, deadline_seconds, max_connections)
    ingress = HttpIngress(settings)
    async with anyio.create_task_group() as tg:
        await tg.start(ingress.run)
        if ingress.state != "running":
            raise RuntimeError(f"the test HTTP server did not start: {ingress.error}")
        try:
            yield ingress
        finally:
            tg.cancel_scope.cancel()
