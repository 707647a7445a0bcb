"""``IshikiProcess``: a real ``ishiki run`` subprocess whose stderr lines wake a waiting test as they are written."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from ishiki_host.testing import FakeOpenAIServer, IshikiProcess, models_yaml, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_line_is_waited_for_and_a_clean_stop_gives_the_exit_status(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    profile = "model: default\nchannels:\n  console:local: ['*']\n"  # the installed engines: a real process
    root = write_config(tmp_path / "bot", profiles={"ana": profile}, models=models_yaml(fake_openai),
                        host="reload_interval_seconds: 0\n")  # fmt: skip
    async with IshikiProcess(root, "--log-level", "info") as process:
        line = await process.logged("profile ana is ready")
        assert "INFO" in line
        assert process.returncode is None or process.returncode == 0  # stdin is closed: it may end on its own
        assert await process.stop(signal.SIGTERM) == 0
        assert "profile ana is ready" in process.stderr()


async def test_waiting_for_a_line_the_process_never_writes_ends_when_it_does(tmp_path: Path) -> None:
    async with IshikiProcess(tmp_path / "missing") as process:
        with pytest.raises(EOFError, match="without logging 'never said'"):
            await process.logged("never said")
        assert await process.wait() == 2
        assert f"{tmp_path / 'missing'}: no such directory" in process.stderr()
