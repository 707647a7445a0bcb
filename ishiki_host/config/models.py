"""The parsed form of ``models.yaml``: providers with their models, and groups of models.

These are plain values; the loader (``ishiki_host.config.models_loader``) builds them from YAML after
validation and ``${VAR}`` expansion, and the gateway turns them into ``LanguageModel``s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from ishiki_host.jsontypes import Json

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError

__all__ = [
    "CircuitBreakerConfig",
    "GroupConfig",
    "ModelPrice",
    "ModelSpec",
    "ModelsConfig",
    "ProviderConfig",
]

Strategy = Literal["failover", "round-robin", "random"]
_HIDDEN = "<hidden>"  # what ``redacted`` shows for a credential, as config errors do


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What a model's tokens cost, in ``currency`` per million tokens (``price:`` of a model in models.yaml).

    ``cached_input`` is the provider's price of input read from its prompt cache, shown with the others; the
    usage counters do not tell cached input apart, so ``cost`` prices all input at ``input``.
    """

    input: float
    output: float
    cached_input: float | None = None
    currency: str = "USD"

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The cost of that many input and output tokens, in ``currency``."""
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model a provider serves. ``input`` lists the modalities it accepts (``text``, ``image``); ``price``
    is what its tokens cost, when configured."""

    id: str
    context_window: int = 128_000
    max_tokens: int = 4_096
    tool_call: bool = True
    input: tuple[str, ...] = ("text",)
    price: ModelPrice | None = None


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """One provider: which API it speaks (an ``ishiki.provider`` entry point name), where, and its models.

    ``options`` keeps the provider-API-specific keys (validated by that API's own schema), e.g. the rules
    file of the ``scripted`` API. ``max_concurrency`` bounds calls in flight to this provider.
    """

    id: str
    api: str
    base_url: str | None = None
    api_key: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    models: tuple[ModelSpec, ...] = ()
    max_concurrency: int = 8
    timeout_seconds: float = 120.0
    connect_timeout_seconds: float = 10.0
    read_timeout_seconds: float = 60.0
    options: Mapping[str, Json] = field(default_factory=dict)

    def model(self, model_id: str) -> ModelSpec | None:
        """The model with that id, if this provider lists it."""
        return next((m for m in self.models if m.id == model_id), None)


@dataclass(frozen=True, slots=True)
class CircuitBreakerConfig:
    """Open after ``failure_threshold`` consecutive failures; offer one probe after ``cooldown_seconds``."""

    failure_threshold: int = 3
    cooldown_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """A named group of ``provider:modelId`` members tried by ``strategy``."""

    name: str
    members: tuple[str, ...]
    strategy: Strategy = "failover"
    circuit_breaker: CircuitBreakerConfig = field(default_factory=CircuitBreakerConfig)
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class ModelsConfig:
    """All of ``models.yaml``. ``file`` is where it came from, for error messages; ``warnings`` are what works
    but should be written otherwise (keys in their old camelCase spelling), for ``ishiki check``."""

    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    groups: Mapping[str, GroupConfig] = field(default_factory=dict)
    file: str | None = None
    warnings: tuple[ConfigError, ...] = field(default=(), compare=False)

    def resolve(self, ref: str) -> tuple[str, ...] | None:
        """The ``provider:modelId`` members a model reference stands for, or ``None`` if it names nothing.

        A group name gives its members; ``provider:modelId`` gives itself when the provider lists that model.
        """
        if ref in self.groups:
            return self.groups[ref].members
        provider_id, sep, model_id = ref.partition(":")
        provider = self.providers.get(provider_id)
        if sep and provider is not None and provider.model(model_id) is not None:
            return (ref,)
        return None

    def spec(self, member: str) -> ModelSpec | None:
        """The ``ModelSpec`` of a ``provider:modelId`` member."""
        provider_id, _, model_id = member.partition(":")
        provider = self.providers.get(provider_id)
        return provider.model(model_id) if provider else None

    def price(self, member: str) -> ModelPrice | None:
        """The configured price of a ``provider:modelId`` member (the ``model`` of a usage row), if any."""
        spec = self.spec(member)
        return spec.price if spec is not None else None

    def prices(self) -> dict[str, ModelPrice]:
        """Every model with a configured price, by ``provider:modelId``."""
        return {f"{p.id}:{m.id}": m.price for p in self.providers.values() for m in p.models if m.price is not None}

    def redacted(self) -> ModelsConfig:
        """A copy with every provider's ``api_key`` and header values shown as ``<hidden>`` (for plugins and
        reports that show the config: prices, models and groups stay)."""
        providers = {
            pid: replace(p, api_key=_HIDDEN if p.api_key else p.api_key, headers=dict.fromkeys(p.headers, _HIDDEN))
            for pid, p in self.providers.items()
        }
        return replace(self, providers=providers)

    def apis_for(self, ref: str) -> tuple[str, ...]:
        """The provider APIs (``ishiki.provider`` names) a model reference needs, in member order."""
        apis: list[str] = []
        for member in self.resolve(ref) or ():
            api = self.providers[member.partition(":")[0]].api
            if api not in apis:
                apis.append(api)
        return tuple(apis)
