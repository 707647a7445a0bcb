"""The event loop ``ishiki run`` takes: uvloop when installed (``auto``), or the one ``event_loop`` names."""

from __future__ import annotations

import sys

import pytest

from ishiki_host.eventloop import backend_options, run, running_loop, uvloop_installed


async def loop_name() -> str:
    return running_loop()


def test_auto_takes_uvloop_when_it_is_installed_and_asyncio_when_not(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend_options("auto") == {"use_uvloop": uvloop_installed()}
    assert run(loop_name) == ("uvloop" if uvloop_installed() else "asyncio")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as on a machine without uvloop
    assert not uvloop_installed()
    assert run(loop_name, loop="auto") == "asyncio"


def test_a_named_loop_is_the_one_run_on() -> None:
    assert run(loop_name, loop="asyncio") == "asyncio"
    if uvloop_installed():
        assert run(loop_name, loop="uvloop") == "uvloop"


def test_an_unknown_loop_is_refused() -> None:
    with pytest.raises(ValueError, match="one of auto, uvloop, asyncio; got 'fast'"):
        backend_options("fast")  # type: ignore[arg-type]
