"""``RuntimeHarness``: the real ``AgentRuntime``, without a Host, for tests of engines and extensions.

It is an ``AgentRuntime`` (so a ``RuntimeContext``) whose parts are made up for the test: a profile (a
default one unless given), the model given, a temporary home, a ``FakeConnection`` as its only channel
(``harness.channel``, at ``sid``). A test mounts the instances it wants to exercise and drives turns::

    async with RuntimeHarness(tmp_path, model=ScriptedModel([...])) as rt:
        await rt.mount_extension(MyExtension().create(rt, {}))
        outcome = await rt.say("hello")   # appends a user message and runs one turn

Tools of mounted extensions and ``extra_tools`` are offered every turn, and instructions of extensions are
joined into the system prompt after the persona and the control-flow section. The kernel tools (read,
send_message, finish, wait) are offered only with ``kernel_tools=True``; ``hooks`` are agent hooks composed
first; an entry may be a factory called with the harness (``hooks=[lambda rt: Engine().create(rt, {})]``), and
a hook object's async ``instructions()`` joins the system prompt and its ``run(*, task_status)`` (a background
task) is started, as the runtime does for engines. ``wakeup``, ``context`` and ``toolcall`` take engine
provider objects (``EveryMessageWakeup()``, or an ``EngineUse`` with a config) whose ``create`` makes the
runtime's instances, as a host would; they also take an instance made for the test, or a factory of one
called with the harness. ``mount_engines(context=, toolcall=)`` does the same for instances made after the
harness exists (they need it as their context), before it is entered. Work given to ``spawn`` runs in the
runtime; ``await rt.settle()`` waits for it (wrap it in a deadline). A profile in cross mode gives the runtime
the cross key (``<profile>/main``). Leaving the block stops the runtime like a host would: turns end, every
extension's ``ishiki_stop`` and dispose run, the log is closed.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.events import parse_sid
from ishiki_host.commands import builtin_commands
from ishiki_host.config.profile_types import Profile
from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.messages import Message
from ishiki_host.runtime.parts import EngineUse, ProfileParts, SharedParts
from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.testing.channels import FakeConnection

if TYPE_CHECKING:
    from ishiki_host.channels.base import ChannelConnection
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.core.turns import TurnOutcome

__all__ = ["RuntimeHarness"]


class _Given:
    """A provider handing out an engine instance made for the test, or made by a factory of the runtime."""

    def __init__(self, given: Any):
        self.given = given

    def create(self, ctx: Any, config: Mapping[str, Any]) -> Any:
        is_factory = inspect.isfunction(self.given) or inspect.ismethod(self.given)
        return self.given(ctx) if is_factory else self.given


def _use(kind: str, provider: Any) -> EngineUse | None:
    """An ``EngineUse`` for a provider object, an instance or a factory of an instance (see the docstring)."""
    if provider is None or isinstance(provider, EngineUse):
        return provider
    if hasattr(provider, "create"):
        return EngineUse(type(provider).__name__, provider, {})
    return EngineUse(f"given {kind}", _Given(provider), {})


class _OneChannel:
    """Outlets holding one connection."""

    def __init__(self, connection: FakeConnection):
        self.connection_ = connection
        self.noted: list[tuple[str, str, tuple[str, ...]]] = []

    def connection(self, sid: str) -> ChannelConnection | None:
        return self.connection_ if sid == self.connection_.sid else None

    def note_sent(self, sid: str, channel_id: str, ids: Sequence[str]) -> None:
        self.noted.append((sid, channel_id, tuple(ids)))


class RuntimeHarness(AgentRuntime):
    """A real runtime on made-up parts (see the module docstring)."""

    def __init__(
        self,
        home: Path,
        *,
        model: LanguageModel,
        profile: Profile | None = None,
        clock: Clock | None = None,
        hooks: Sequence[AgentHooks | Callable[[RuntimeHarness], AgentHooks]] = (),
        extra_tools: Sequence[Tool] = (),
        models: Mapping[str, LanguageModel] | None = None,
        services: Mapping[str, Any] | None = None,
        context_window: int = 128_000,
        seed: int = 0,
        sid: str = "console:local",
        channel_id: str = "private:local",
        kernel_tools: bool = False,
        wakeup: Any = None,
        context: Any = None,
        toolcall: Any = None,
        accepts_images: bool = False,
        shutdown_grace: float = 10.0,
    ):
        home = Path(home)
        profile = profile or Profile(
            id="test", directory=home, file=home / "profile.yml", persona="You are a test persona.", model="test"
        )
        platform, self_id = parse_sid(sid)
        self.channel = FakeConnection(platform=platform, self_id=self_id)
        self._models = dict(models or {})
        host = SharedParts(
            clock=clock or FakeClock(),
            config_dir=home,
            data_dir=home,
            outlets=_OneChannel(self.channel),
            models=self._model_for,
            services=dict(services or {}),
            seed=seed,
            shutdown_grace=shutdown_grace,
            commands=builtin_commands(),
        )
        parts = ProfileParts(
            profile=profile,
            model=model,
            context_window=context_window,
            accepts_images=accepts_images,
            context=_use("context", context),
            wakeup=_use("wakeup", wakeup),
            toolcall=_use("toolcall", toolcall),
        )
        key = RuntimeKey.for_mode(profile.mode, profile.id, sid, channel_id)
        super().__init__(key, parts, host, home=home, extra_tools=extra_tools, kernel_tools=kernel_tools)
        self._hook_specs = tuple(hooks)
        self._stack = AsyncExitStack()

    def _model_for(self, ref: str) -> LanguageModel:
        if ref in self._models:
            return self._models[ref]
        if ref == self.profile.model:
            return self.model
        raise KeyError(f"the harness has no model {ref!r}; pass it in models=")

    def mount_engines(self, *, context: Any = None, toolcall: Any = None) -> None:
        """Use engine instances (or factories) made for this harness; call it before entering."""
        if self.lifecycle.state != "new":
            raise RuntimeError("mount engines before entering the harness")
        parts = self._parts
        if context is not None:
            parts = dataclasses.replace(parts, context=_use("context", context))
        if toolcall is not None:
            parts = dataclasses.replace(parts, toolcall=_use("toolcall", toolcall))
        self._parts = parts

    async def __aenter__(self) -> RuntimeHarness:
        self.home.mkdir(parents=True, exist_ok=True)
        self._extra_hooks = tuple(h if isinstance(h, AgentHooks) else h(self) for h in self._hook_specs)
        tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)  # ends the hooks' background tasks after the stop
        self._stack.push_async_callback(self.stop)
        await tg.start(self.run)
        for hook in self._extra_hooks:
            run = getattr(hook, "run", None)
            if run is not None and inspect.iscoroutinefunction(run):
                await tg.start(run)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def system_prompt(self, trust: TrustLevel) -> str:
        """The runtime's prompt, then the ``instructions()`` of hook objects given to the harness."""
        sections = [await super().system_prompt(trust)]
        for hook in self._extra_hooks:
            instructions = getattr(hook, "instructions", None)
            if instructions is not None and inspect.iscoroutinefunction(instructions):
                sections.append(await instructions())
        return "\n\n".join(s for s in sections if s)

    async def settle(self) -> None:
        """Until no work given to ``spawn`` is running (wrap it in a deadline)."""
        await self.lifecycle.background_done()

    async def say(self, text: str) -> TurnOutcome:
        """Append a user message and run one turn; returns its outcome (wrap it in a deadline)."""
        await self.agent.send(Message.user(text))
        return await (await self.agent.continue_(reason="test"))
