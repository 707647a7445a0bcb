"""The contract of a model API adapter (entry-point group ``ishiki.provider``).

A ``ModelAPI`` subclass speaks one wire protocol (OpenAI Chat Completions, Anthropic Messages, ...). The
gateway instantiates it once per host and calls ``create`` once per provider of ``models.yaml`` that names it,
with that provider's config and the provider's shared ``httpx.AsyncClient``. The client it returns answers
requests for any model of that provider and raises only ``ishiki_host.errors.ModelError`` subclasses:
errors are classified here, at the boundary, and nowhere else.

A client that also implements ``EmbeddingClient.embed`` serves embedding models (the OpenAI-compatible
``/embeddings`` API); ``ishiki_host.gateway.embeddings`` reaches it through the gateway's groups, breakers and
scheduler.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import httpx

from ishiki_host.config.models import ModelSpec, ProviderConfig
from ishiki_host.config.services import Plugin
from ishiki_host.core.model import ModelRequest, ModelResult, StreamEvent

if TYPE_CHECKING:
    from ishiki_host.errors import ConfigError

__all__ = ["EmbeddingClient", "ModelAPI", "ProviderClient"]


class ProviderClient(Protocol):
    """One provider's connection, made by ``ModelAPI.create``."""

    async def generate(self, model: ModelSpec, request: ModelRequest) -> ModelResult:
        """Answer ``request`` with ``model`` in one piece."""
        ...

    def stream(self, model: ModelSpec, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Answer ``request`` as events; the last one is ``StreamDone``."""
        ...

    async def aclose(self) -> None:
        """Release what the client holds (the shared httpx client is closed by the gateway)."""
        ...


@runtime_checkable
class EmbeddingClient(Protocol):
    """A provider client that also embeds text (optional: a client without ``embed`` serves no embeddings)."""

    async def embed(self, model: ModelSpec, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, all of the same length; only ``ModelError`` subclasses are raised
        (a malformed answer is a ``ModelBadRequest``)."""
        ...


class ModelAPI(Plugin):
    """Base class of model API adapters.

    ``config_schema`` is the JSON Schema of the provider keys this API adds to ``models.yaml`` beyond the common
    ones (``api``, ``base_url``, ``api_key``, ``headers``, ``models``, ``max_concurrency``, timeouts); they arrive in
    ``ProviderConfig.options``. ``api_version`` is the plugin-API version the adapter was written for;
    ``needs_base_url`` says whether ``models.yaml`` must give the provider a ``base_url``.
    """

    needs_base_url: ClassVar[bool] = True

    @abstractmethod
    def create(self, provider: ProviderConfig, http: httpx.AsyncClient) -> ProviderClient:
        """Make the client for one provider."""

    def check(self, provider: ProviderConfig, config_dir: Path) -> Sequence[ConfigError]:
        """The problems ``create`` would raise for ``provider``, found without connecting (none by default).

        ``ishiki check`` calls it for each provider of ``models.yaml`` that uses this API; relative paths in
        the provider's options are relative to ``config_dir``. Only read files here.
        """
        return ()
