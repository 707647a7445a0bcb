"""A model API that answers with the last user message (no network), and one that wants a base URL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

import httpx

from ishiki_host import ModelAPI, ModelRequest, ModelResult
from ishiki_host.config.models import ModelSpec, ProviderConfig
from ishiki_host.core.model import StreamDone, StreamEvent, TextDelta


class EchoClient:
    """Answers every request with ``prefix`` + the text of its last message."""

    def __init__(self, provider: ProviderConfig) -> None:
        self.prefix = str(provider.options.get("prefix", ""))
        self.provider = provider

    async def generate(self, model: ModelSpec, request: ModelRequest) -> ModelResult:
        last = request.messages[-1].text if request.messages else ""
        return ModelResult(text=self.prefix + last, model=f"{self.provider.id}:{model.id}")

    async def stream(self, model: ModelSpec, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        result = await self.generate(model, request)
        yield TextDelta(result.text)
        yield StreamDone(result)

    async def aclose(self) -> None:
        return None


class EchoAPI(ModelAPI):
    """An API without HTTP; its one extra provider key is ``prefix``."""

    needs_base_url: ClassVar[bool] = False
    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"prefix": {"type": "string", "default": "echo: "}},
    }

    def create(self, provider: ProviderConfig, http: httpx.AsyncClient) -> EchoClient:
        return EchoClient(provider)


class EchoHttpAPI(EchoAPI):
    """The same, declaring that it needs ``base_url``."""

    needs_base_url: ClassVar[bool] = True
