"""The parsed form of a profile: plain frozen values built from a validated ``profile.yml``.

Defaults live in ``schemas/profile.schema.json``; the field defaults here repeat them for code that builds a
``Profile`` by hand (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ishiki_host.config.claims import Claims
from ishiki_host.config.services import ENGINE_GROUPS, EXTENSION_GROUP, service_name
from ishiki_host.jsontypes import Json

__all__ = [
    "CodemodeConfig",
    "EngineChoice",
    "ExtensionUse",
    "FailoverConfig",
    "Profile",
    "ResourcesConfig",
    "SessionConfig",
    "ToolsearchConfig",
    "TrustConfig",
    "TypingConfig",
    "UnlistedMode",
    "unlisted_of",
]

EngineKind = Literal["context", "wakeup", "toolcall"]


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """The engine of one section (``context``, ``wakeup``, ``toolcall``) and its options, defaults applied."""

    kind: EngineKind
    name: str
    config: Mapping[str, Json] = field(default_factory=dict)

    @property
    def service(self) -> str:
        """Its full service name (``ishiki.engine.context.standard``)."""
        return service_name(ENGINE_GROUPS[self.kind], self.name)


@dataclass(frozen=True, slots=True)
class ExtensionUse:
    """One enabled extension and its config, defaults applied."""

    name: str
    config: Mapping[str, Json] = field(default_factory=dict)

    @property
    def service(self) -> str:
        """Its full service name (``ishiki.ext.memory``)."""
        return service_name(EXTENSION_GROUP, self.name)


@dataclass(frozen=True, slots=True)
class FailoverConfig:
    """Retries of a failed model call: ``attempts`` in total, ``backoff_ms`` apart, on ``failover_on`` errors."""

    attempts: int = 3
    backoff_ms: int = 500
    failover_on: Literal["unavailable", "any"] = "unavailable"


@dataclass(frozen=True, slots=True)
class CodemodeConfig:
    """Limits of codemode programs (present only when the profile turns codemode on).

    The limit fields are those of ``ishiki_host.tools.codemode.Limits``, by the same names; ``direct`` names
    tools that keep a direct call beside their use in programs.
    """

    timeout_ms: int = 30_000
    memory_limit_bytes: int = 268_435_456
    max_jobs: int = 1_000_000
    max_tool_input_bytes: int = 1_048_576
    max_tool_output_bytes: int = 4_194_304
    max_result_bytes: int = 65_536
    max_concurrent_tool_calls: int = 16
    max_tool_calls: int = 1_000
    max_log_bytes: int = 16_384
    direct: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolsearchConfig:
    """Deferred tool disclosure (present only when the profile turns toolsearch on)."""

    max_results: int = 5
    resident: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TypingConfig:
    """A typing delay before each sent message (present only when the profile turns it on)."""

    chars_per_second: float = 30.0
    max_delay_ms: int = 3_000


@dataclass(frozen=True, slots=True)
class ResourcesConfig:
    """Limits of the runtime's resource center."""

    artifact_threshold_chars: int = 30_000
    max_asset_bytes: int = 20_971_520


UnlistedMode = Literal["serve", "refuse", "pairing"]
"""What a profile does with a sender in neither trust list (``trust.unlisted``)."""


@dataclass(frozen=True, slots=True)
class TrustConfig:
    """Owners and trusted senders as ``platform:userId``; what happens to unlisted senders (``unlisted``);
    ``commands``: the level a command needs here, by command name, where it differs from the command's own;
    ``pairing_expiry_seconds``: how long a pairing code holds.

    ``allow_unlisted`` is the older spelling of ``unlisted`` (``True``: ``serve``, ``False``: ``refuse``).
    Either may be given; given both, they must agree on whether unlisted senders are served (``ValueError``
    otherwise; ``False`` goes with ``pairing`` too, so a copy made with ``dataclasses.replace`` stays valid).
    After construction both are set: ``unlisted`` (``serve`` when neither was given) and ``allow_unlisted``
    (``unlisted == "serve"``). A profile file is stricter: there ``allow_unlisted: false`` is ``refuse`` only.
    """

    owners: tuple[str, ...] = ()
    trusted: tuple[str, ...] = ()
    allow_unlisted: bool | None = None
    commands: Mapping[str, Literal["untrusted", "trusted", "owner"]] = field(default_factory=dict)
    unlisted: UnlistedMode | None = None
    pairing_expiry_seconds: float = 3600.0

    def __post_init__(self) -> None:
        legacy: UnlistedMode | None = None if self.allow_unlisted is None else unlisted_of(self.allow_unlisted)
        if (
            self.unlisted is not None
            and self.allow_unlisted is not None
            and self.allow_unlisted != (self.unlisted == "serve")
        ):
            raise ValueError(
                f"trust.unlisted is {self.unlisted!r} but trust.allow_unlisted {self.allow_unlisted} means "
                f"{legacy!r}; keep one of them"
            )
        mode: UnlistedMode = self.unlisted or legacy or "serve"
        if mode not in ("serve", "refuse", "pairing"):
            raise ValueError(f"trust.unlisted must be serve, refuse or pairing, not {mode!r}")
        if not self.pairing_expiry_seconds > 0:
            raise ValueError(f"trust.pairing_expiry_seconds must be positive, got {self.pairing_expiry_seconds!r}")
        object.__setattr__(self, "unlisted", mode)
        object.__setattr__(self, "allow_unlisted", mode == "serve")

    @property
    def unlisted_mode(self) -> UnlistedMode:
        """``unlisted``, typed as always set (it is, after construction)."""
        return self.unlisted or "serve"


def unlisted_of(allow_unlisted: bool) -> UnlistedMode:
    """The ``trust.unlisted`` mode the older ``allow_unlisted`` stands for."""
    return "serve" if allow_unlisted else "refuse"


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """The summarizer mode and the compaction threshold (share of the context window)."""

    summarizer: Literal["auto", "manual", "off"] = "auto"
    compact_threshold: float = 0.9


@dataclass(frozen=True, slots=True)
class Profile:
    """One valid profile.

    ``extends`` holds the enabled extensions in order (on-by-default built-ins first, unless listed);
    ``document`` is the validated ``profile.yml`` with defaults, for plugins that read their own keys.
    """

    id: str
    directory: Path
    file: Path
    persona: str
    model: str
    mode: Literal["channel", "cross"] = "channel"
    claims: Claims = field(default_factory=Claims)
    extends: tuple[ExtensionUse, ...] = ()
    context: EngineChoice = field(default_factory=lambda: EngineChoice("context", "standard"))
    wakeup: EngineChoice = field(default_factory=lambda: EngineChoice("wakeup", "standard"))
    toolcall: EngineChoice = field(default_factory=lambda: EngineChoice("toolcall", "native"))
    failover: FailoverConfig = field(default_factory=FailoverConfig)
    codemode: CodemodeConfig | None = None
    toolsearch: ToolsearchConfig | None = None
    typing: TypingConfig | None = None
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    trust: TrustConfig = field(default_factory=TrustConfig)
    session: SessionConfig = field(default_factory=SessionConfig)
    reply_with_text: bool = True
    suggest_commands: bool = True
    stream_replies: bool = True
    max_steps: int = 20
    failure_reply: str | None = "Sorry, something went wrong on my side; please try again in a moment."
    document: Mapping[str, Json] = field(default_factory=dict)

    @property
    def engines(self) -> tuple[EngineChoice, EngineChoice, EngineChoice]:
        """The three engine choices."""
        return self.context, self.wakeup, self.toolcall

    def extension(self, name: str) -> ExtensionUse | None:
        """The enabled extension ``name``, if any."""
        return next((e for e in self.extends if e.name == name), None)
