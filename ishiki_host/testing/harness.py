"""``RuntimeHarness``: a real runtime context without a Host, for tests of engines and extensions.

It builds the real parts a runtime is made of (a fact log, an event bus, an agent, a resource center, a
plugin manager for extension instances) in a temporary home, and implements ``RuntimeContext``. A test mounts
the instances it wants to exercise and drives turns::

    async with RuntimeHarness(tmp_path, model=ScriptedModel([...])) as rt:
        await rt.mount_extension(MyExtension().create(rt, {}))
        outcome = await rt.say("hello")   # appends a user message and runs one turn

Tools of mounted extensions and ``extra_tools`` are offered every turn; instructions of extensions are joined
into the system prompt after ``persona``, then the ``instructions()`` of hook objects that have them (a context
engine's). An entry of ``hooks`` may be a factory called with the harness, so an engine instance can be made
from this context (``hooks=[lambda rt: Engine().create(rt, {})]``); a hook object with an async
``run(*, task_status)`` method (an engine's background task) is started in the harness's task group, as the
runtime starts it, and cancelled when the harness closes. ``toolcall`` (an instance, or a factory called with
the harness) is assembled as the runtime does it: the agent calls ``toolcall.wrap(model)``, its ``hooks()`` join
the agent's hooks and its ``instructions()`` the system prompt; ``rt.model`` stays the unwrapped model. The
harness has no channels: ``send_message`` is not a kernel tool here (tests that need it pass their own tool).

Work given to ``spawn`` runs in the harness's task group; ``await rt.settle()`` waits until it has finished
(wrap it in a deadline), and leaving the harness cancels what is still running.

Engine instances that need the harness as their context can also be mounted after it is built and before it
is entered, as the runtime would use them::

    rt = RuntimeHarness(tmp_path, model=model)
    rt.mount_engines(context=MyContext().create(rt, {}), toolcall=MyToolcall().create(rt, {}))
    async with rt: ...
"""

from __future__ import annotations

import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ishiki_host.config.profile_types import Profile
from ishiki_host.core.agent import Agent
from ishiki_host.core.bus import EventBus
from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.core.factlog import FactLog
from ishiki_host.core.hooks import AgentHooks
from ishiki_host.core.messages import Message
from ishiki_host.core.model import LanguageModel, Priority
from ishiki_host.core.tools import Tool
from ishiki_host.core.turns import Turn, TurnHandle, TurnOutcome, TurnSetup
from ishiki_host.plugins.hooks import await_results, call_in_order, make_plugin_manager
from ishiki_host.plugins.runtime_api import ToolcallEngineInstance
from ishiki_host.runtime.paths import RuntimeKey
from ishiki_host.runtime.resources import ResourceCenter, create_runtime_resources

if TYPE_CHECKING:
    from ishiki_host.plugins.runtime_api import ContextEngineInstance, ToolcallEngineInstance

__all__ = ["RuntimeHarness"]


class RuntimeHarness:
    """A standalone runtime context on real parts (see the module docstring)."""

    def __init__(
        self,
        home: Path,
        *,
        model: LanguageModel,
        profile: Profile | None = None,
        clock: Clock | None = None,
        hooks: Sequence[AgentHooks | Callable[[RuntimeHarness], AgentHooks]] = (),
        toolcall: ToolcallEngineInstance | Callable[[RuntimeHarness], ToolcallEngineInstance] | None = None,
        extra_tools: Sequence[Tool] = (),
        models: Mapping[str, LanguageModel] | None = None,
        services: Mapping[str, Any] | None = None,
        context_window: int = 128_000,
        seed: int = 0,
        sid: str = "console:local",
        channel_id: str = "private:local",
    ):
        self._home = Path(home)
        self._model = model
        self._profile = profile or Profile(
            id="test",
            directory=self._home,
            file=self._home / "profile.yml",
            persona="You are a test persona.",
            model="test",
        )
        self._clock = clock or FakeClock()
        self._hook_specs = list(hooks)
        self._hooks: list[AgentHooks] = []
        self._agent_model = model
        self._engines: list[ContextEngineInstance | ToolcallEngineInstance] = []
        self._toolcall_spec = toolcall
        self._toolcall: ToolcallEngineInstance | None = None
        self._extra_tools = list(extra_tools)
        self._models = dict(models or {})
        self._services = dict(services or {})
        self._context_window = context_window
        self._rng = random.Random(seed)
        self._sid = sid
        self._channel_id = channel_id
        self._key = RuntimeKey.for_channel(self._profile.id, sid, channel_id)
        self._bus = EventBus()
        self._pm = make_plugin_manager()
        self._plugins: list[object] = []
        self._disposers: list[Any] = []
        self._stack = AsyncExitStack()
        self._log: FactLog | None = None
        self._agent: Agent | None = None
        self._resources: ResourceCenter | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._background: set[anyio.CancelScope] = set()
        self._settled = anyio.Event()
        self._closing = False

    # -- RuntimeContext --------------------------------------------------------------------------------

    @property
    def key(self) -> RuntimeKey:
        """The runtime's key."""
        return self._key

    @property
    def profile(self) -> Profile:
        """The profile."""
        return self._profile

    @property
    def sid(self) -> str | None:
        """The channel's sid."""
        return self._sid

    @property
    def channel_id(self) -> str | None:
        """The channel id."""
        return self._channel_id

    @property
    def home(self) -> Path:
        """The runtime home."""
        return self._home

    @property
    def config_dir(self) -> Path:
        """The profile directory's parent's parent, or the home when built by hand."""
        return self._home

    @property
    def data_dir(self) -> Path:
        """The home (a harness has no separate data dir)."""
        return self._home

    @property
    def clock(self) -> Clock:
        """The clock."""
        return self._clock

    @property
    def rng(self) -> random.Random:
        """A seeded random source."""
        return self._rng

    @property
    def logger(self) -> logging.Logger:
        """A logger named after the key."""
        return logging.getLogger(f"ishiki.runtime.{self._key}")

    @property
    def log(self) -> FactLog:
        """The fact log (open while the harness is)."""
        assert self._log is not None, "use the harness as an async context manager"
        return self._log

    @property
    def bus(self) -> EventBus:
        """The event bus."""
        return self._bus

    @property
    def agent(self) -> Agent:
        """The agent (running while the harness is)."""
        assert self._agent is not None, "use the harness as an async context manager"
        return self._agent

    @property
    def resources(self) -> ResourceCenter:
        """The resource center."""
        assert self._resources is not None, "use the harness as an async context manager"
        return self._resources

    @property
    def model(self) -> LanguageModel:
        """The profile's model."""
        return self._model

    @property
    def context_window(self) -> int:
        """The context window given to the harness."""
        return self._context_window

    @property
    def hooks(self) -> list[AgentHooks]:
        """The agent's hook objects (factories resolved), once the harness is open."""
        return list(self._hooks)

    @property
    def services(self) -> dict[str, Any]:
        """Host-wide services given to the harness."""
        return self._services

    def models(self, ref: str) -> LanguageModel:
        """A model from ``models``; the profile's model for the profile's own reference."""
        if ref in self._models:
            return self._models[ref]
        if ref == self._profile.model:
            return self._model
        raise KeyError(f"the harness has no model {ref!r}; pass it in models=")

    async def wake(self, prompt: str | None = None, *, priority: Priority = "interactive") -> TurnHandle:
        """Queue a turn; a missing or blank prompt is "Continue."."""
        return await self.agent.continue_(prompt or "Continue.", priority=priority, reason="wake")

    def spawn(self, fn: Callable[[], Awaitable[object]], *, name: str) -> None:
        """Run ``fn()`` in the harness's task group (see ``settle``); ignored once the harness is closing."""
        assert self._tg is not None, "use the harness as an async context manager"
        if self._closing:
            self.logger.debug("background work %s not started: the harness is closing", name)
            return
        scope = anyio.CancelScope()
        self._background.add(scope)
        self._tg.start_soon(self._run_background, fn, name, scope, name=name)

    async def _run_background(self, fn: Callable[[], Awaitable[object]], name: str, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                await fn()
        except Exception:
            self.logger.exception("background work %s failed", name)
        finally:
            self._background.discard(scope)
            if not self._background:
                self._settled.set()
                self._settled = anyio.Event()

    async def settle(self) -> None:
        """Wait until no work given to ``spawn`` is running (wrap it in a deadline)."""
        while self._background:
            await self._settled.wait()

    # -- driving ---------------------------------------------------------------------------------------

    async def __aenter__(self) -> RuntimeHarness:
        self._home.mkdir(parents=True, exist_ok=True)
        self._log = await FactLog.open(self._home / "facts.jsonl", clock=self._clock)
        self._stack.push_async_callback(self._log.close)
        self._resources = create_runtime_resources(self._home, clock=self._clock).center
        self._hooks[len(self._hooks) :] = [
            spec if isinstance(spec, AgentHooks) else spec(self) for spec in self._hook_specs
        ]
        self._agent_model = self._assemble_toolcall()
        self._agent = Agent(
            self._log, self._agent_model, self._setup, hooks=self._hooks, bus=self._bus, clock=self._clock
        )
        self._tg = tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)  # ends the hooks' background tasks once shut down
        self._stack.push_async_callback(self._shutdown)
        await tg.start(self._agent.run)
        for hook in self._hooks:
            run = getattr(hook, "run", None)
            if callable(run) and inspect.iscoroutinefunction(run):
                await tg.start(run)
        return self

    def _assemble_toolcall(self) -> LanguageModel:
        """The model the agent calls: the toolcall engine's wrapper when one is given (its hooks join)."""
        spec = self._toolcall_spec
        if spec is None:
            return self._agent_model
        self._toolcall = spec if isinstance(spec, ToolcallEngineInstance) else spec(self)
        self._engines.append(self._toolcall)
        hooks = self._toolcall.hooks()
        if hooks is not None and hooks not in self._hooks:
            self._hooks.append(hooks)
        return self._toolcall.wrap(self._model)

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

    async def _shutdown(self) -> None:
        self._closing = True
        for scope in list(self._background):
            scope.cancel()
        with anyio.CancelScope(shield=True):
            await call_in_order(self._pm, "ishiki_stop", self._plugins, return_exceptions=True, runtime=self)
            for dispose in reversed(self._disposers):
                try:
                    await await_results([dispose()])
                except Exception:
                    self.logger.exception("dispose of an extension failed")
            if self._agent is not None:
                await self._agent.stop()

    async def mount_extension(self, instance: object) -> None:
        """Register an extension instance and run its ``ishiki_attach``."""
        self._pm.register(instance)
        self._plugins.append(instance)
        disposers = await call_in_order(self._pm, "ishiki_attach", [instance], runtime=self)
        self._disposers.extend(d for d in disposers if callable(d))

    def mount_engines(
        self, *, context: ContextEngineInstance | None = None, toolcall: ToolcallEngineInstance | None = None
    ) -> None:
        """Use engine instances made with this harness as their context (call before entering).

        Their hooks go before the ``hooks`` given at construction (context engine first), the agent calls
        ``toolcall.wrap(model)``, and each turn's system prompt ends with both engines' ``instructions()``.
        """
        if self._agent is not None:
            raise RuntimeError("mount engines before entering the harness")
        engines = [engine for engine in (context, toolcall) if engine is not None]
        self._engines.extend(engines)
        self._hooks[:0] = [hooks for hooks in (engine.hooks() for engine in engines) if hooks is not None]
        if toolcall is not None:
            self._agent_model = toolcall.wrap(self._model)

    async def say(self, text: str) -> TurnOutcome:
        """Append a user message and run one turn; returns its outcome (wrap it in a deadline)."""
        await self.agent.send(Message.user(text))
        return await (await self.agent.continue_(reason="test"))

    async def _setup(self, turn: Turn) -> TurnSetup:
        tools = list(self._extra_tools)
        for batch in await call_in_order(self._pm, "ishiki_tools", self._plugins, runtime=self):
            tools.extend(batch or ())
        sections = [self._profile.persona]
        sections += [s for s in await call_in_order(self._pm, "ishiki_instructions", self._plugins, runtime=self) if s]
        for hook in _unique([*self._engines, *self._hooks]):
            instructions = getattr(hook, "instructions", None)
            if callable(instructions) and inspect.iscoroutinefunction(instructions) and (text := await instructions()):
                sections.append(text)
        return TurnSetup(system="\n\n".join(sections), tools=tools)


def _unique(objects: Sequence[object]) -> list[object]:
    """``objects`` without repeats (an engine instance is often its own hooks object)."""
    return list({id(o): o for o in objects}.values())
