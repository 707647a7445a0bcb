"""A host plugin that serves one page: what its block says and which profiles the host has."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio

from ishiki_host import HostPlugin, HostPluginContext, HttpRequest, HttpResponse, PluginConfig


class Hello(HostPlugin):
    """Answers ``GET /<name>/`` with its greeting and the host's profiles."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"greeting": {"type": "string", "default": "hello"}},
    }

    def create(self, ctx: HostPluginContext, config: PluginConfig) -> HelloPage:
        return HelloPage(ctx, str(config["greeting"]))


class HelloPage:
    """One life of ``Hello``."""

    def __init__(self, ctx: HostPluginContext, greeting: str) -> None:
        self.ctx = ctx
        self.greeting = greeting

    async def run(self, *, task_status: Any) -> None:
        async with self.ctx.http_mount() as mount:
            mount.route("/", self.page, methods=("GET",))
            task_status.started()
            await anyio.sleep_forever()

    async def page(self, request: HttpRequest) -> HttpResponse:
        profiles = [p.id for p in self.ctx.profiles()]
        return HttpResponse(200, json.dumps({"greeting": self.greeting, "profiles": profiles}))
