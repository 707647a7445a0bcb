"""``RuntimeHarness``: the real ``AgentRuntime``, without a Host, for tests of engines and extensions.

It is an ``AgentRuntime`` whose parts are made up for the test: a profile (a default one unless given), the
model given, a temporary home, a ``FakeConnection`` as its only channel (``harness.channel``, at ``sid``).
``harness.context`` is the ``RuntimeContext`` its plugins get. A test mounts the plugins it wants to exercise
and drives turns::

    async with RuntimeHarness(tmp_path, model=ScriptedModel([...])) as rt:
        await rt.mount(MyExtension(), {"greeting": "hi"})   # create(rt.context, config with defaults)
        outcome = await rt.say("hello")   # appends a user message and runs one turn

Tools of mounted extensions and ``extra_tools`` are offered every turn, and instructions of extensions are joined
into the system prompt after the persona and the control-flow section. The kernel tools (read, send_message, finish,
wait) are offered only with ``kernel_tools=True`` (or those named: ``("read",)``); ``hooks`` are agent hooks
composed first; an entry may be a factory called with the context (``hooks=[lambda ctx: Engine().create(ctx,
{})]``), and a hook object's async ``instructions()`` joins the system prompt and its ``run(*, task_status)`` (a
background task) is started, as the runtime does for engines. ``wakeup``, ``context`` and ``toolcall`` take engine
provider objects (``EveryMessageWakeup()``, or an ``EngineUse`` with a config) whose ``create`` makes the runtime's
instances, as a host would; they also take an instance made for the test, or a factory of one called with the
context. ``mount_engines(context=, toolcall=)`` does the same for instances made after the harness exists, before it
is entered. ``services`` is the ``HostServices`` the runtime shares (give several harnesses one to share it as the
runtimes of one host do); ``config_dir`` the config directory it sees; ``turn_listeners`` get every turn's key
and report, as a host's metrics do (``SharedParts.turn_listeners``). Work given to ``spawn`` runs in the runtime;
``await rt.settle()`` waits for it (wrap it in a deadline). A profile in cross mode gives the runtime the cross key
(``<profile>/main``). Leaving the block stops the runtime like a host would: turns end, every extension's
``ishiki_stop`` and dispose run, the log is closed. ``rt.expect()`` opens an expectation block: messages received
as a channel delivers them, then what must have been sent and called (``ishiki_host.testing.expect``).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import anyio

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.channels.events import parse_sid
from ishiki_host.commands import builtin_commands
from ishiki_host.config.profile_types import Profile
from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.messages import Message
from ishiki_host.plugins.services import HostServices
from ishiki_host.runtime.parts import EngineUse, ProfileParts, SharedParts
from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.testing.channels import FakeConnection
from ishiki_host.testing.configs import plugin_config
from ishiki_host.testing.expect import Expectations

if TYPE_CHECKING:
    from ishiki_host.channels.base import ChannelConnection
    from ishiki_host.config.services import Plugin, PluginConfig
    from ishiki_host.core.agent import Agent
    from ishiki_host.core.bus import EventBus
    from ishiki_host.core.factlog_contract import FactLogProtocol
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.tools import Tool, TrustLevel
    from ishiki_host.core.turns import TurnOutcome
    from ishiki_host.jsontypes import Json
    from ishiki_host.plugins.runtime_api import RuntimeContext, TurnView
    from ishiki_host.resources import ResourceCenter
    from ishiki_host.runtime.parts import FsyncPolicy, TurnListener
    from ishiki_host.sessions.manager import Sessions

__all__ = ["Creates", "RuntimeHarness"]

InstanceT = TypeVar("InstanceT", covariant=True)


class Creates(Protocol[InstanceT]):
    """A plugin whose ``create`` makes an instance of ``InstanceT`` (an ``Extension`` subclass)."""

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> InstanceT:
        """The instance of one runtime."""
        ...


class _Given:
    """A provider handing out an engine instance made for the test, or made by a factory of the runtime."""

    def __init__(self, given: Any):
        self.given = given

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> Any:
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
        hooks: Sequence[AgentHooks | Callable[[RuntimeContext], AgentHooks]] = (),
        extra_tools: Sequence[Tool] = (),
        models: Mapping[str, LanguageModel] | None = None,
        services: HostServices | None = None,
        config_dir: Path | None = None,
        context_window: int = 128_000,
        seed: int = 0,
        sid: str = "console:local",
        channel_id: str = "private:local",
        kernel_tools: bool | Collection[str] = False,
        wakeup: object = None,
        context: object = None,
        toolcall: object = None,
        accepts_images: bool = False,
        shutdown_grace: float = 10.0,
        fsync: FsyncPolicy = "turn",
        turn_listeners: Sequence[TurnListener] = (),
    ):
        home = Path(home)
        profile = profile or Profile(
            id="test", directory=home, file=home / "profile.yml", persona="You are a test persona.", model="test"
        )
        platform, self_id = parse_sid(sid)
        self.channel = FakeConnection(platform=platform, self_id=self_id)
        self._models = dict(models or {})
        self._model = model
        self._default_ref = profile.model
        shared = SharedParts(
            clock=clock or FakeClock(),
            config_dir=config_dir if config_dir is not None else home,
            data_dir=home,
            outlets=_OneChannel(self.channel),
            models=self._model_for,
            services=services if services is not None else HostServices(),
            seed=seed,
            shutdown_grace=shutdown_grace,
            fsync=fsync,
            commands=builtin_commands(),
            turn_listeners=tuple(turn_listeners),
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
        self._hook_specs = tuple(hooks)
        self._given_hooks: tuple[AgentHooks, ...] = ()
        self._parts_given = parts
        self._stack = AsyncExitStack()
        super().__init__(key, parts, shared, home=home, extra_tools=extra_tools, kernel_tools=kernel_tools)

    def _model_for(self, ref: str) -> LanguageModel:
        if ref in self._models:
            return self._models[ref]
        if ref == self._default_ref:
            return self._model
        raise KeyError(f"the harness has no model {ref!r}; pass it in models=")

    # -- what a test reads ------------------------------------------------------------------------------

    @property
    def agent(self) -> Agent:
        """The runtime's agent (``agent.send``, ``agent.continue_``)."""
        return self.context.agent

    @property
    def log(self) -> FactLogProtocol:
        """The runtime's fact log."""
        return self.context.log

    @property
    def profile(self) -> Profile:
        """The profile the runtime serves."""
        return self.context.profile

    @property
    def model(self) -> LanguageModel:
        """The profile's model (the ``model`` given)."""
        return self.context.model

    @property
    def bus(self) -> EventBus:
        """The runtime's event bus."""
        return self.context.bus

    @property
    def clock(self) -> Clock:
        """The clock the runtime runs on."""
        return self.context.clock

    @property
    def turn_state(self) -> TurnView:
        """The running turn, as plugins read it."""
        return self.context.turn_state

    @property
    def services(self) -> HostServices:
        """What the runtime shares with others (``services=``)."""
        return self.context.services

    @property
    def home(self) -> Path:
        """The runtime's home (the harness's directory)."""
        return self.context.home

    @property
    def resources(self) -> ResourceCenter:
        """The runtime's resource center."""
        return self.context.resources

    @property
    def hooks(self) -> tuple[AgentHooks, ...]:
        """The agent hooks given to the harness, factories called (once it is entered)."""
        return self._given_hooks

    @property
    def sessions(self) -> Sessions:
        """The runtime's sessions."""
        return self.context.sessions

    # -- what a test does -------------------------------------------------------------------------------

    def mount_engines(self, *, context: object = None, toolcall: object = None) -> None:
        """Use engine instances (or factories) made for this harness; call it before entering."""
        if self.state != "new":
            raise RuntimeError("mount engines before entering the harness")
        parts = self._parts
        if context is not None:
            parts = dataclasses.replace(parts, context=_use("context", context))
        if toolcall is not None:
            parts = dataclasses.replace(parts, toolcall=_use("toolcall", toolcall))
        self._parts = parts

    async def mount(
        self, extension: Creates[InstanceT], config: Mapping[str, Json] | None = None, name: str | None = None
    ) -> InstanceT:
        """Create ``extension``'s instance for this runtime with ``config`` (checked against its schema, the
        defaults filled in, as a host would) and mount it; returns the instance."""
        plugin = cast("type[Plugin]", type(extension))
        instance = extension.create(self.context, plugin_config(plugin, config or {}))
        await self.mount_extension(instance, name or type(extension).__name__)
        return instance

    async def __aenter__(self) -> RuntimeHarness:
        self.home.mkdir(parents=True, exist_ok=True)
        self._given_hooks = tuple(h if isinstance(h, AgentHooks) else h(self.context) for h in self._hook_specs)
        self._extra_hooks = self._given_hooks
        tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)  # ends the hooks' background tasks after the stop
        self._stack.push_async_callback(self.stop)
        await tg.start(self.run)
        for hook in self._given_hooks:
            run = getattr(hook, "run", None)
            if run is not None and inspect.iscoroutinefunction(run):
                await tg.start(run)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def _system_prompt(self, trust: TrustLevel) -> str:
        """The runtime's prompt, then the ``instructions()`` of hook objects given to the harness."""
        sections = [await super()._system_prompt(trust)]
        for hook in self._given_hooks:
            instructions = getattr(hook, "instructions", None)
            if instructions is not None and inspect.iscoroutinefunction(instructions):
                sections.append(await instructions())
        return "\n\n".join(s for s in sections if s)

    async def settle(self) -> None:
        """Until no work given to ``spawn`` is running (wrap it in a deadline)."""
        await self.settled(background=True)

    async def say(self, text: str) -> TurnOutcome:
        """Append a user message and run one turn; returns its outcome (wrap it in a deadline)."""
        await self.agent.send(Message.user(text))
        return await (await self.agent.continue_(reason="test"))

    def expect(self, *, timeout: float = 30.0) -> Expectations:
        """An expectation block on the entered harness (``ishiki_host.testing.expect``): ``async with
        rt.expect() as x: x.receive("hi"); x.should_send("hello")``. Messages received go through ``deliver``;
        without a wakeup engine the block starts a turn for each, with one the engine decides. ``timeout``
        caps the whole run (it fails as "timed out")."""
        wakeup = self._need_started().engines.wakeup
        start_turn = self._start_expected_turn if wakeup is None else None
        channel_id = self.key.channel_id or "private:local"
        return Expectations(self, channel_id=channel_id, start_turn=start_turn, timeout=timeout)

    async def _start_expected_turn(self) -> None:
        await self.agent.continue_(reason="expect")
