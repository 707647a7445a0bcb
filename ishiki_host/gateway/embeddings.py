"""Embedding models through the gateway: ``embedding_model(gateway, ref)``.

A provider serves embeddings when its client implements ``EmbeddingClient.embed`` (``openai-completions``
does: the OpenAI-compatible ``POST {base_url}/embeddings`` of OpenAI, Ollama, vLLM and llama.cpp). The ref is
a group name or ``provider:modelId`` of ``models.yaml``, like a chat model's, and a call goes the same way:
the group orders the members, the breakers filter them, the profile's failover policy retries, the scheduler
gives the call a slot at its priority (``background`` for the memories embedded after a turn,
``interactive`` for the text a turn searches with), and every call is reported to the call listeners.

``GatewayEmbeddings(current)`` is the ``EmbeddingSource`` a host shares with its plugins
(``HostServices.embeddings``): it checks a ref on the gateway of the moment and returns an ``Embedder`` that
resolves it again on each call, so a reload of ``models.yaml`` applies to embedders already handed out.

What comes back is checked before anyone stores it: one vector per text, each of the same length, finite
numbers. A text longer than ``MAX_EMBED_CHARS`` is cut to that length before it is sent (an embeddings model
reads a few thousand tokens at most; the start of a memory says what it is about).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ishiki_host.errors import ModelBadRequest, ModelError
from ishiki_host.gateway.api import EmbeddingClient
from ishiki_host.gateway.failover import FailoverPolicy
from ishiki_host.gateway.gateway import ModelCallRecord

if TYPE_CHECKING:
    from ishiki_host.config.models import ModelSpec
    from ishiki_host.core.model import Priority
    from ishiki_host.gateway.api import ProviderClient
    from ishiki_host.gateway.gateway import Gateway
    from ishiki_host.gateway.model import GatewayModel

__all__ = [
    "MAX_EMBED_CHARS",
    "Embedder",
    "EmbeddingModel",
    "EmbeddingSource",
    "Embeddings",
    "GatewayEmbeddings",
    "embedding_model",
]

MAX_EMBED_CHARS = 8_000


@dataclass(frozen=True, slots=True)
class Embeddings:
    """The answer of one embedding call: a vector per text, in order, and the member that answered."""

    vectors: tuple[tuple[float, ...], ...]
    model: str

    @property
    def dimensions(self) -> int:
        """The length of every vector."""
        return len(self.vectors[0]) if self.vectors else 0


class Embedder(Protocol):
    """What embeds text for the memory layer: ``EmbeddingModel`` on a gateway, or a stand-in in tests."""

    @property
    def name(self) -> str:
        """The model's ref (``provider:modelId`` or a group): the key its vectors are stored under."""
        ...

    async def embed(
        self, texts: Sequence[str], *, priority: Priority = "background", limit_seconds: float | None = None
    ) -> Embeddings:
        """One vector per text, in order; ``ModelError`` when no member answers well."""
        ...


EmbeddingSource = Callable[[str], Embedder]
"""``source(ref)``: the embedder of a ref of ``models.yaml``; ``ModelsConfigInvalid`` when it names nothing."""


class EmbeddingModel:
    """An embeddings model behind a gateway ref (see the module docstring); ``name`` is the ref."""

    def __init__(self, chat: GatewayModel):
        self._chat = chat  # the ref's group, breakers and failover policy: the same as a chat model's

    @property
    def name(self) -> str:
        """The ref this model was asked for."""
        return self._chat.ref

    async def embed(
        self, texts: Sequence[str], *, priority: Priority = "background", limit_seconds: float | None = None
    ) -> Embeddings:
        """One vector per text (each cut to ``MAX_EMBED_CHARS``); ``ModelError`` when no member answers well."""
        if not texts:
            return Embeddings((), self.name)
        sent = [text[:MAX_EMBED_CHARS] for text in texts]
        gateway = self._chat.gateway
        attempts = self._chat._attempts()
        while True:
            member = await attempts.next()
            try:
                return await _embed_on(gateway, member, sent, priority, limit_seconds, self.name)
            except ModelError as error:
                attempts.failed(member, error)


def embedding_model(gateway: Gateway, ref: str, *, failover: FailoverPolicy | None = None) -> EmbeddingModel:
    """The embeddings model of a group or ``provider:modelId``; ``ModelsConfigInvalid`` for an unknown ref.

    Without ``failover``, a call tries each member once, without waiting between them: whoever embeds in the
    background has a backlog that waits, and a turn's recall falls back to full text; neither wants backoff.
    """
    if failover is None:
        failover = FailoverPolicy(attempts=max(1, len(gateway.model(ref).members)))
    return EmbeddingModel(gateway.model(ref, failover=failover))


class GatewayEmbeddings:
    """The ``EmbeddingSource`` of a host: refs resolved on the gateway ``current()`` returns (module docstring)."""

    def __init__(self, current: Callable[[], Gateway]):
        self._current = current

    def __call__(self, ref: str) -> Embedder:
        """The embedder of ``ref``, checked now (``ModelsConfigInvalid``), resolved again on each call."""
        embedding_model(self._current(), ref)
        return _LiveEmbedder(self._current, ref)


class _LiveEmbedder:
    """An ``EmbeddingModel`` on whatever gateway is current."""

    def __init__(self, current: Callable[[], Gateway], ref: str):
        self._current = current
        self.name = ref

    async def embed(
        self, texts: Sequence[str], *, priority: Priority = "background", limit_seconds: float | None = None
    ) -> Embeddings:
        model = embedding_model(self._current(), self.name)
        return await model.embed(texts, priority=priority, limit_seconds=limit_seconds)


async def _embed_on(
    gateway: Gateway, member: str, texts: list[str], priority: Priority, limit_seconds: float | None, ref: str
) -> Embeddings:
    async def call(client: ProviderClient, spec: ModelSpec) -> list[list[float]]:
        if not isinstance(client, EmbeddingClient):
            raise ModelBadRequest(f"{member}: this provider's API serves no embeddings", model=member)
        return _checked(await client.embed(spec, texts), len(texts), member)

    vectors, latency = await gateway._call_on_member(member, call, priority, limit_seconds, True, ref)
    gateway._emit(ModelCallRecord(ref, member, priority, False, latency))
    return Embeddings(tuple(tuple(v) for v in vectors), member)


def _checked(vectors: list[list[float]], count: int, member: str) -> list[list[float]]:
    """``vectors`` if they are ``count`` vectors of one length, every number finite; else ``ModelBadRequest``."""
    if len(vectors) != count or not vectors or len({len(v) for v in vectors}) != 1 or not vectors[0]:
        raise ModelBadRequest(f"{member}: expected {count} embeddings of one length", model=member)
    if not all(math.isfinite(x) for v in vectors for x in v):
        raise ModelBadRequest(f"{member}: an embedding holds a number that is not finite", model=member)
    return vectors
