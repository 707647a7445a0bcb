"""``HostPluginContext.pairing`` on a real Host: a host plugin lists the open requests, approves a code (a wrong
one is a ``PairingCodeError`` naming it) and revokes the approval, and the running host serves the sender in
between and refuses them after, from their next message; without a memory database there is no pairing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import pytest
from anyio.abc import TaskStatus

from ishiki_host import HostPlugin, HostPluginContext, PluginConfig
from ishiki_host.errors import PairingCodeError
from ishiki_host.runtime.pairing import WELCOME_TEXT
from ishiki_host.testing import MakeHost, host_yaml, profile_yaml

pytestmark = pytest.mark.anyio

PAIRING = "trust: {owners: ['fake:42'], unlisted: pairing}\n"


class Life:
    """One life of the test plugin: it hands its context to the test, and waits."""

    def __init__(self, owner: type[Peek], ctx: HostPluginContext):
        self.owner = owner
        self.ctx = ctx

    async def run(self, *, task_status: TaskStatus[None]) -> None:
        self.owner.contexts.append(self.ctx)
        task_status.started()
        await anyio.sleep_forever()


class Peek(HostPlugin):
    """A host plugin that only shows its context to the test."""

    config_schema: ClassVar[Mapping[str, Any]] = {"type": "object", "additionalProperties": False}
    contexts: ClassVar[list[HostPluginContext]]

    def create(self, ctx: HostPluginContext, config: PluginConfig) -> Life:
        return Life(type(self), ctx)


def start(make_host: MakeHost, **options: Any) -> tuple[type[Peek], Any]:
    cls: type[Peek] = type("Peek", (Peek,), {"contexts": []})
    host = host_yaml(extra="plugins:\n  peek: {}\n")
    profiles = {"ana": profile_yaml(extra=PAIRING)}
    return cls, make_host(profiles=profiles, host=host, plugins={"ishiki.host.peek": cls}, **options)


async def test_a_plugin_approves_and_revokes_and_the_host_follows_at_the_next_message(make_host: MakeHost) -> None:
    cls, running = start(make_host)
    async with running as th:
        (ctx,) = cls.contexts
        admin = ctx.pairing
        assert admin is not None
        channel = th.channel()
        await channel.say("hello?", user_id="9", channel_id="private:9", user_name="Bob")
        [request] = await admin.requests()
        assert (request.profile, request.sender, request.name) == ("ana", "fake:9", "Bob")
        with pytest.raises(PairingCodeError, match="no pending request with code ZZZZZZ") as wrong:
            await admin.approve("zzzzzz", "trusted")
        assert wrong.value.reason == "unknown"

        paired = await admin.approve(request.code, "trusted")
        assert (paired.profile, paired.sender, paired.level) == ("ana", "fake:9", "trusted")
        assert await admin.requests() == []
        await (await channel.say("hi", user_id="9", channel_id="private:9")).settled()
        assert channel.texts()[1:3] == [WELCOME_TEXT, "ok"]  # the test engines answer ok

        removed = await admin.revoke("ana", "fake:9")
        assert removed is not None
        assert removed.level == "trusted"
        assert await admin.approved() == []
        refused = await channel.say("still there?", user_id="9", channel_id="private:9")
        assert refused.entry_id is None  # not in the fact log: refused in the host's own process too
        [renewed] = await admin.requests()
        assert renewed.code in channel.texts()[-1]
        assert await admin.revoke("ana", "fake:9") is None


async def test_a_host_whose_memory_database_did_not_open_has_no_pairing(make_host: MakeHost) -> None:
    cls, running = start(make_host, files={"data/memory.db": "not a database at all"})
    async with running as th:
        (ctx,) = cls.contexts
        assert th.host.services.memory is None
        assert ctx.pairing is None
