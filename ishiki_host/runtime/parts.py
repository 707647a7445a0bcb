"""What a runtime is made from: the parts its host shares, and the parts its profile shares.

``SharedParts`` is shared by every runtime of a host (clock, directories, the channel outlets, other models,
host-wide services, the host's own commands, the hook catalog of the extension classes it mounted, the host's
turn listeners, the fsync its fact logs use and the store that opens them). ``ProfileParts``
is shared by the runtimes of one profile: the profile, its one model object (never mutated; toolcall engines wrap it
per runtime) and the provider objects of its engines and extensions, whose ``create`` makes each runtime's
instances. ``ProviderCache`` keeps one provider object per service and class for the whole host; ``profile_parts``
assembles a profile's parts from the registry.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ishiki_host.errors import PluginNotFound
from ishiki_host.plugins.hooks import HookCatalog
from ishiki_host.plugins.services import HostServices
from ishiki_host.resources import AssetFetchers
from ishiki_host.runtime.logstore import FileLogs, RuntimeLogs

if TYPE_CHECKING:
    from ishiki_host.addresses.keys import RuntimeKey
    from ishiki_host.config.models import ModelsConfig
    from ishiki_host.config.profile_types import EngineChoice, ExtensionUse, Profile
    from ishiki_host.core.clock import Clock
    from ishiki_host.core.factlog import Syncer
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.plugins.commands import Command
    from ishiki_host.plugins.discovery import PluginRegistry
    from ishiki_host.plugins.runtime_api import TurnReport
    from ishiki_host.runtime.outbound import Outlets

__all__ = ["EngineUse", "HomeLocks", "ProfileParts", "ProviderCache", "SharedParts", "TurnListener", "profile_parts"]

FsyncPolicy = Literal["always", "turn", "never"]
TurnListener = Callable[["RuntimeKey", "TurnReport"], None]
"""Called with every runtime's key and report at each turn's end, on the event loop: it must be quick and never
block (the host's metrics, usage counts and the log line of an answered message)."""


class HomeLocks:
    """One lock per runtime home: a runtime holds its home for its whole life, so a respawn (after eviction
    or a reload) waits for the old runtime to close its fact log instead of failing on its lock."""

    def __init__(self) -> None:
        self._locks: dict[Path, tuple[anyio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, home: Path) -> AsyncIterator[None]:
        """Hold ``home`` until the block ends."""
        lock, users = self._locks.get(home, (anyio.Lock(), 0))
        self._locks[home] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[home]
            if users <= 1:
                del self._locks[home]
            else:
                self._locks[home] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


@dataclass
class SharedParts:
    """What every runtime of a host shares (see the module docstring)."""

    clock: Clock
    config_dir: Path
    data_dir: Path
    outlets: Outlets
    models: Callable[[str], LanguageModel]
    fetchers: AssetFetchers = field(default_factory=AssetFetchers)
    services: HostServices = field(default_factory=HostServices)
    fsync: FsyncPolicy = "turn"
    seed: int | None = None
    shutdown_grace: float = 10.0
    homes: HomeLocks = field(default_factory=HomeLocks)
    commands: tuple[Command, ...] = ()
    hooks: HookCatalog = field(default_factory=HookCatalog)
    turn_listeners: tuple[TurnListener, ...] = ()
    syncer: Syncer | None = None
    logs: RuntimeLogs = field(default_factory=FileLogs)
    """Where each runtime's fact log is opened (``ishiki_host.runtime.logstore``)."""
    fence: Callable[[RuntimeKey], Awaitable[None]] | None = None
    """Awaited before the runtime at a key sends a message (``None``: nothing to check); raises ``FactLogError``
    when this host may no longer speak for it. A host of a fleet speaks while it holds the runtime's lease: a
    host that froze past it and woke sends nothing that the new owner would say again."""
    channels: Callable[[], Mapping[str, Mapping[str, Any]]] = dict
    """The host's channel supervisors by label (``whatsapp#0``): ``state`` and ``error``, for ``/status``."""


@dataclass(frozen=True, slots=True)
class EngineUse:
    """An engine's provider object and the config its ``create`` gets."""

    name: str
    provider: Any
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileParts:
    """What the runtimes of one profile share (see the module docstring)."""

    profile: Profile
    model: LanguageModel
    context_window: int = 128_000
    accepts_images: bool = False
    context: EngineUse | None = None
    wakeup: EngineUse | None = None
    toolcall: EngineUse | None = None
    extensions: tuple[tuple[ExtensionUse, Any], ...] = ()


class ProviderCache:
    """One provider object per service and class, for a whole host (a reinstalled class gets a new one)."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, type], Any] = {}

    def get(self, registry: PluginRegistry, service: str) -> Any:
        """The provider object of ``service``; ``PluginNotFound`` when the registry has no loaded class."""
        cls = registry.plugin(service)
        if cls is None:
            raise PluginNotFound(f"{service} is not installed or failed to load", path=service)
        key = (service, cls)
        if key not in self._objects:
            self._objects[key] = cls()
        return self._objects[key]


def _engine(choice: EngineChoice, registry: PluginRegistry, cache: ProviderCache) -> EngineUse:
    return EngineUse(choice.name, cache.get(registry, choice.service), choice.config)


def profile_parts(
    profile: Profile, model: LanguageModel, models: ModelsConfig, registry: PluginRegistry, cache: ProviderCache
) -> ProfileParts:
    """A profile's parts; the context window and image support are the weakest among its model's members."""
    specs = [s for s in (models.spec(m) for m in models.resolve(profile.model) or ()) if s is not None]
    return ProfileParts(
        profile=profile,
        model=model,
        context_window=min((s.context_window for s in specs), default=128_000),
        accepts_images=bool(specs) and all("image" in s.input for s in specs),
        context=_engine(profile.context, registry, cache),
        wakeup=_engine(profile.wakeup, registry, cache),
        toolcall=_engine(profile.toolcall, registry, cache),
        extensions=tuple((use, cache.get(registry, use.service)) for use in profile.extends),
    )
