"""The worker's side of the link, before its host has started."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ishiki_host.host.host import Host
from ishiki_host.testing import FakeOpenAIServer, models_yaml, profile_yaml, write_config
from ishiki_host.workers.worker import WorkerService

pytestmark = pytest.mark.anyio


async def test_a_stop_asked_for_while_the_host_starts_stops_it_once_it_has(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": profile_yaml()}, models=models_yaml(fake_openai))
    host = Host(root)
    service = WorkerService(0)
    assert await service.stop({}) is None  # the supervisor's stop came before the host was up
    assert service.stopping
    service.serve(host)  # the host is up now
    with anyio.fail_after(10):  # a cap as a last resort: without the fix it waits forever
        await host.wait_stop_requested()
