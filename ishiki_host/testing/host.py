"""A real ``Host`` on a temporary config directory, for end-to-end tests of plugins.

``write_config(root, profiles=..., models=...)`` writes a config directory; ``TestHost(root)`` runs a
``Host`` on it with the fake channel (platform ``fake``, account ``bot``) and the test engines of
``ishiki_host.testing.engines`` registered besides the installed plugins::

    root = write_config(tmp_path / "bot", profiles={"ana": profile_yaml()}, models=models_yaml(fake_openai))
    fake_openai.tool_call("send_message", {"messages": ["hi!"]})
    async with TestHost(root) as th:
        delivery = await th.channel().say("hello")
        await delivery.settled()
        assert th.channel().texts() == ["hi!"]

The ``make_host`` fixture does the writing with a models.yaml pointing at the ``fake_openai`` server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ishiki_host.core.clock import Clock, FakeClock
from ishiki_host.host.host import Host
from ishiki_host.testing.channels import FakeChannel, FakeConnection
from ishiki_host.testing.engines import EveryMessageWakeup, PassthroughToolcall, PlainContext
from ishiki_host.testing.registry import registry_with

if TYPE_CHECKING:
    from ishiki_host.plugins.discovery import PluginRegistry
    from ishiki_host.plugins.hostplugin import HostPluginContext, HostPluginInstance
    from ishiki_host.testing.fake_models import FakeModelServer

__all__ = [
    "TEST_ENGINES",
    "TEST_PLUGINS",
    "MakeHost",
    "TestHost",
    "host_yaml",
    "models_yaml",
    "profile_yaml",
    "write_config",
]

TEST_PLUGINS: Mapping[str, type] = {
    "ishiki.channel.fake": FakeChannel,
    "ishiki.engine.wakeup.every": EveryMessageWakeup,
    "ishiki.engine.context.plain": PlainContext,
    "ishiki.engine.toolcall.plain": PassthroughToolcall,
}
"""What ``TestHost`` registers besides the installed plugins."""

TEST_ENGINES = "wakeup: {engine: every}\ncontext: {engine: plain}\ntoolcall: {engine: plain}\n"
"""Profile lines selecting the test engines."""


def profile_yaml(
    claims: str = "fake:bot: ['*']",
    *,
    model: str = "default",
    mode: str = "channel",
    extra: str = "",
    summarizer: str | None = "off",
) -> str:
    """A profile.yml with the test engines; ``claims`` is the body of ``channels:`` (one line per sid).

    ``summarizer`` is the ``session.summarizer`` mode written: ``off`` by default, because the summarizer's
    background calls would take answers scripted for turns; ``None`` writes no ``session`` section.
    """
    body = "\n".join(f"  {line}" for line in claims.splitlines())
    session = f"session: {{summarizer: {summarizer}}}\n" if summarizer is not None else ""
    return f"model: {model}\nmode: {mode}\nchannels:\n{body}\n{TEST_ENGINES}{session}{extra}"


def models_yaml(server: FakeModelServer, *, models: tuple[str, ...] = ("fake-model",), extra: str = "") -> str:
    """A models.yaml with provider ``fake`` at ``server`` and group ``default`` of its first model."""
    listed = "\n".join(f"      - id: {m}" for m in models)
    return (
        f"providers:\n  fake:\n    api: {server.api}\n    base_url: {server.base_url}\n    models:\n{listed}\n{extra}"
        f"groups:\n  default:\n    models: [fake:{models[0]}]\n"
    )


def host_yaml(
    accounts: str = "[{self_id: bot}]", *, reload_interval: float = 0, interactive_grace: float = 0, extra: str = ""
) -> str:
    """An ishiki.yaml with fake-channel accounts; polling is off unless ``reload_interval`` is given (tests
    call ``host.reload()``).

    ``interactive_grace`` (the model scheduler's ``interactive_grace_seconds``) is 0 unless given: background
    calls after a turn (the summarizer's) would otherwise wait on a ``FakeClock`` that only the test moves, and
    every stop of the host would sit out its shutdown grace for them.
    """
    return (
        f"reload_interval_seconds: {reload_interval}\nscheduler: {{interactive_grace_seconds: {interactive_grace}}}\n"
        f"channels:\n  fake:\n    accounts: {accounts}\n{extra}"
    )


def write_config(
    root: Path,
    *,
    profiles: Mapping[str, str],
    models: str,
    host: str | None = None,
    personas: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write a config directory under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "models.yaml").write_text(models, encoding="utf-8")
    (root / "ishiki.yaml").write_text(host_yaml() if host is None else host, encoding="utf-8")
    for profile_id, text in profiles.items():
        directory = root / "profiles" / profile_id
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "profile.yml").write_text(text, encoding="utf-8")
        persona = (personas or {}).get(profile_id, f"You are {profile_id}, a test persona.")
        (directory / "persona.md").write_text(persona, encoding="utf-8")
    for relative, text in (files or {}).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


class TestHost:
    """A ``Host`` with the test plugins (see the module docstring); ``clock`` defaults to a ``FakeClock``."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        root: Path,
        *,
        plugins: Mapping[str, type] | None = None,
        clock: Clock | None = None,
        seed: int = 0,
        shutdown_grace: float | None = 5.0,
        **host_options: Any,
    ):
        self.root = root
        self.clock = clock or FakeClock()
        self.registry: PluginRegistry = registry_with({**TEST_PLUGINS, **(plugins or {})})
        self.host = Host(
            root,
            registry=lambda: self.registry,
            clock=self.clock,
            seed=seed,
            shutdown_grace=shutdown_grace,
            **host_options,
        )
        self._stack = AsyncExitStack()

    def channel(self, sid: str = "fake:bot") -> FakeConnection:
        """The running fake connection of ``sid``."""
        connection = self.host.channel(sid)
        if not isinstance(connection, FakeConnection):
            raise LookupError(f"no fake channel {sid} is running (running: {', '.join(self.host.directory.sids())})")
        return connection

    def plugin_context(self, name: str) -> HostPluginContext:
        """The ``HostPluginContext`` the host made for host plugin ``name`` (what the plugin sees of the host);
        ``LookupError`` when ``ishiki.yaml`` does not configure it."""
        supervisor = self.host.host_plugins.supervisor(name)
        if supervisor is None:
            raise LookupError(f"host plugin {name} is not running (is it under plugins in ishiki.yaml?)")
        return supervisor.context

    def plugin_instance(self, name: str) -> HostPluginInstance | None:
        """The running life of host plugin ``name`` (what its ``create`` returned), ``None`` before the first
        start; ``LookupError`` when ``ishiki.yaml`` does not configure it."""
        supervisor = self.host.host_plugins.supervisor(name)
        if supervisor is None:
            raise LookupError(f"host plugin {name} is not running (is it under plugins in ishiki.yaml?)")
        return supervisor.instance

    async def __aenter__(self) -> TestHost:
        await self._stack.enter_async_context(self.host)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()


MakeHost = Callable[..., TestHost]
"""The ``make_host`` fixture: ``make_host(profiles={...}, plugins={...}, **host_options)`` gives a ``TestHost``."""
