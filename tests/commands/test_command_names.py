"""``ChannelHost.command_names`` on a real host: the host's own commands before a runtime runs at the channel,
then the table of the runtime that answers there (what the console completes)."""

from __future__ import annotations

import anyio
import pytest

from ishiki_host.commands import builtin_commands
from ishiki_host.testing import FakeOpenAIServer, profile_yaml
from ishiki_host.testing.host import MakeHost

pytestmark = pytest.mark.anyio


async def test_the_names_are_the_hosts_then_the_runtimes(make_host: MakeHost, fake_openai: FakeOpenAIServer) -> None:
    builtins = sorted(name for command in builtin_commands() for name in command.names)
    async with make_host(profiles={"ana": profile_yaml()}) as th:
        channel = th.channel()
        assert channel.host is not None
        assert list(channel.host.command_names("private:1")) == builtins  # no runtime there yet
        with anyio.fail_after(10):
            await channel.say("/help")
        runtime = await th.host.runtime_for("ana", "fake:bot", "private:1")
        assert set(builtins) < set(runtime.command_names())  # and the extensions' (the heartbeats' /beats)
        assert list(channel.host.command_names("private:1")) == runtime.command_names()
        assert list(channel.host.command_names("private:2")) == builtins  # another chat: no runtime yet
    assert "stop" in builtins
