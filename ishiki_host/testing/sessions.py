"""``SessionRig``: a ``RuntimeHarness`` with a memory store, sessions, a summarizer and a command table.

For tests of commands and of extensions that use sessions or memories, without a Host::

    async with SessionRig(tmp_path) as rig:
        await rig.say("I like green tea", sender="telegram:42", trust="trusted")
        result = await rig.command("/compact")
        assert rig.replies[-1].startswith("Summarized")

``persona`` answers turns (default: ``reply("ok")``); ``summarizer`` answers summary calls (default: a
numbered summary naming the last line it read). ``rig.replies`` collects what commands sent back;
``rig.context(...)`` builds the ``CommandContext`` of one sender. ``StaticHostView`` is a ``HostView`` with
fixed lines and tools.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ishiki_host.channels.events import IshikiEvent, User
from ishiki_host.commands import builtin_commands
from ishiki_host.config.profile_types import ExtensionUse, Profile
from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.plugins.commands import CommandTable
from ishiki_host.plugins.services import HostServices
from ishiki_host.runtime.command_runner import run_command
from ishiki_host.runtime.gate import Invocation
from ishiki_host.sessions.summarizer import Summarizer
from ishiki_host.store.memory_store import MemoryStore
from ishiki_host.testing.harness import RuntimeHarness
from ishiki_host.testing.models import FunctionModel, reply

if TYPE_CHECKING:
    from ishiki_host.core.hooks import AgentHooks
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.core.turns import TurnOutcome
    from ishiki_host.runtime.command_runner import CommandResult
    from ishiki_host.sessions.manager import SessionManager

__all__ = ["SessionRig", "StaticHostView", "inbound_data"]


@dataclass
class StaticHostView:
    """A ``HostView`` answering fixed lines and tools."""

    models: Sequence[str] = ("model: test:scripted (breaker closed)",)
    extensions: Sequence[str] = ()
    channels: Sequence[str] = ()
    tools: Sequence[Tool] = field(default_factory=list)

    async def model_status(self) -> Sequence[str]:
        """The fixed model lines."""
        return self.models

    async def extension_status(self) -> Sequence[str]:
        """The fixed extension lines."""
        return self.extensions

    async def channel_status(self) -> Sequence[str]:
        """The fixed channel lines."""
        return self.channels

    async def tool_surface(self) -> Sequence[Tool]:
        """The fixed tools."""
        return self.tools


_message_ids = itertools.count(1)


def inbound_data(
    text: str, *, sender: str, trust: TrustLevel, name: str | None = None, at: float = 0.0
) -> dict[str, Any]:
    """The ``data`` of an inbound message entry from ``sender`` (``platform:userId``) at ``trust``."""
    platform, _, user_id = sender.partition(":")
    event = IshikiEvent(
        kind="message.created",
        platform=platform,
        self_id="bot",
        channel_id="private:local",
        message_id=str(next(_message_ids)),
        timestamp=at,
        user=User(user_id, name),
        content=text,
    )
    return {"role": "user", "parts": [{"type": "text", "text": text}], "source": event.to_dict(), "trust": trust}


class _NumberedSummaries:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, request: ModelRequest) -> ModelResult:
        self.count += 1
        last = request.messages[-1].text.strip().splitlines()[-2:-1] or ["nothing"]
        return reply(f"Summary {self.count}: the talk ended with {last[0]}")


class SessionRig:
    """A harness runtime with sessions and commands (see the module docstring)."""

    def __init__(
        self,
        home: Path,
        *,
        persona: LanguageModel | None = None,
        summarizer: LanguageModel | None = None,
        profile: Profile | None = None,
        clock: Clock | None = None,
        host: StaticHostView | None = None,
        hooks: Sequence[AgentHooks] = (),
        extra_tools: Sequence[Tool] = (),
        context_window: int = 128_000,
        idle_timeout: float = 30.0,
    ):
        self.home = Path(home)
        self.persona = persona or FunctionModel(lambda request: reply("ok"), name="test:persona")
        self.summarizer_model = summarizer or FunctionModel(_NumberedSummaries(), name="test:summarizer")
        self.profile = profile or Profile(
            id="test",
            directory=self.home,
            file=self.home / "profile.yml",
            persona="You are a test persona.",
            model="test",
            extends=(ExtensionUse("memory"), ExtensionUse("skills")),
        )
        self.clock = clock or FakeClock()
        self.host = host or StaticHostView(tools=list(extra_tools))
        self.replies: list[str] = []
        self._hooks = hooks
        self._extra_tools = extra_tools
        self._context_window = context_window
        self._idle_timeout = idle_timeout
        self._stack = AsyncExitStack()
        self.table = CommandTable()
        self.table.register_all(builtin_commands(), source="host")

    async def __aenter__(self) -> SessionRig:
        self.store = await self._stack.enter_async_context(
            await MemoryStore.open(self.home / "data" / "memory.db", clock=self.clock)
        )
        self.rt = await self._stack.enter_async_context(
            RuntimeHarness(
                self.home / "runtime",
                model=self.persona,
                profile=self.profile,
                clock=self.clock,
                hooks=self._hooks,
                extra_tools=self._extra_tools,
                services=HostServices(memory=self.store),
                context_window=self._context_window,
            )
        )
        # The runtime's own, as its commands use it (the concrete manager: the rig sets its idle timeout).
        self.sessions = cast("SessionManager", self.rt.sessions)
        self.sessions.use_store(self.store)
        self.sessions.summarizer = Summarizer(self.summarizer_model)
        self.sessions.idle_timeout = self._idle_timeout
        await self.sessions.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def _send(self, text: str) -> None:
        self.replies.append(text)

    def context(
        self,
        *,
        sender: str = "console:local",
        trust: TrustLevel = "owner",
        channel: str = "console:local private:local",
    ) -> Invocation:
        """The ``CommandContext`` of a command from ``sender`` at ``trust``; replies go to ``replies``."""
        return Invocation(sender, trust, channel, self.rt.context, self.table, self.host, self._send)

    async def command(
        self, text: str, *, sender: str = "console:local", trust: TrustLevel = "owner"
    ) -> CommandResult | None:
        """Run ``text`` through the command table as ``sender`` would."""
        return await run_command(self.table, self.context(sender=sender, trust=trust), text)

    async def post(self, text: str, *, sender: str = "console:local", trust: TrustLevel = "owner") -> None:
        """Append an inbound message from ``sender`` without starting a turn."""
        await self.rt.agent.send(inbound_data(text, sender=sender, trust=trust, at=self.clock.now()))

    async def say(self, text: str, *, sender: str = "console:local", trust: TrustLevel = "owner") -> TurnOutcome:
        """Append an inbound message from ``sender`` and run one turn; returns its outcome."""
        await self.post(text, sender=sender, trust=trust)
        return await (await self.rt.agent.continue_(reason="test"))
