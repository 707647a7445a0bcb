"""The HTTP ingress in a real Host: ``http`` of ishiki.yaml, a channel that takes its input by webhook (answered
200 once the message is durable), a channel that needs HTTP on a host that serves none, bad settings."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx
import pytest
from anyio.abc import TaskStatus

from ishiki_host import ChannelHost, HttpRequest, HttpResponse, PluginConfig
from ishiki_host.config.host import load_host_config
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.channels import FakeChannel, FakeConnection
from ishiki_host.testing.host_fixtures import MakeHost

pytestmark = pytest.mark.anyio

HANG = 20.0


class HookConnection(FakeConnection):
    """A fake platform that calls its bot by webhook: each POST body is one message of ``private:1``."""

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        assert self.host is not None
        async with self.host.http_mount() as mount:
            mount.route("/", self._hook)
            task_status.started()
            await anyio.sleep_forever()

    async def _hook(self, request: HttpRequest) -> HttpResponse:
        delivery = await self.say(request.body.decode(), channel_id="private:1", user_id="7")
        return HttpResponse(200, f"recorded as {delivery.entry_id}")


class HookChannel(FakeChannel):
    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"id": {"type": "string"}, "self_id": {"type": "string", "default": "bot"}},
    }

    def create(self, ctx: ChannelHost, account: PluginConfig) -> HookConnection:
        return HookConnection(ctx, platform="hook", self_id=str(account.get("self_id", "bot")))


PLUGINS = {"ishiki.channel.hook": HookChannel}


def host_file(http: str) -> str:
    return f"reload_interval_seconds: 0\nchannels:\n  hook:\n    accounts: [{{id: main, self_id: bot}}]\n{http}"


async def test_a_webhook_is_answered_once_its_message_is_durable_and_the_persona_replies(
    make_host: MakeHost, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default = Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["hi from ana"]}),))
    host = host_file("http: {listen: '127.0.0.1:0', public_url: 'https://bot.example.com/'}\n")
    async with make_host(profiles={"ana": profile_yaml("hook:bot: ['*']")}, host=host, plugins=PLUGINS) as th:
        status = th.host.status()["http"]
        connection = th.host.channel("hook:bot")
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{th.host.http.base_url}/hooks/hook/main", content=b"hello")
        runtime = await th.host.runtime_for("ana", "hook:bot", "private:1")
        with anyio.fail_after(HANG):
            await runtime.settled()
        recorded = [e.data["source"]["content"] for e in runtime.context.log.tail(20) if e.data.get("role") == "user"]
    assert answer.status_code == 200
    assert answer.text.startswith("recorded as ")
    assert recorded == ["hello"]
    assert connection.texts() == ["hi from ana"]
    assert status["state"] == "running"
    assert status["mounts"] == ["/hooks/hook/main", "/metrics", "/readyz"]  # the host mounts its own two
    assert status["publicUrl"] == "https://bot.example.com"


async def test_a_webhook_channel_on_a_host_without_http_fails_once_saying_what_to_set(make_host: MakeHost) -> None:
    async with make_host(profiles={"ana": profile_yaml("hook:bot: ['*']")}, host=host_file(""), plugins=PLUGINS) as th:
        status = th.host.status()
    channel = status["channels"]["hook#0"]
    assert channel["state"] == "failed"
    assert "set http.listen in ishiki.yaml" in channel["error"]
    assert status["http"]["state"] == "off"


async def test_status_in_another_channel_says_which_account_of_the_profile_is_down(make_host: MakeHost) -> None:
    claims = "fake:bot: ['*']\nhook:bot: ['*']"
    host = host_file("").replace("channels:\n", "channels:\n  fake:\n    accounts: [{self_id: bot}]\n")
    async with make_host(profiles={"ana": profile_yaml(claims)}, host=host, plugins=PLUGINS) as th:
        console = th.channel()
        await console.say("/status")
        lines = console.texts()[-1].splitlines()
    down = [line for line in lines if line.startswith("channel ")]
    assert down == [
        "channel hook#0: failed (IngressError: cannot serve /hooks/hook/main: the host serves no HTTP: set "
        "http.listen in ishiki.yaml (e.g. 127.0.0.1:8080))"
    ]


@pytest.mark.parametrize(
    ("block", "path", "message"),
    [
        ("{listen: 'localhost'}", "http.listen", "is not address:port"),
        ("{listen: '127.0.0.1:99999'}", "http.listen", "port must be a number from 0 to 65535"),
        ("{listen: 'example.com:80'}", "http.listen", "is not an IP address"),
        ("{public_url: 'https://bot.example.com'}", "http.public_url", "http.listen is not"),
        ("{listen: '127.0.0.1:0', public_url: 'ftp://x'}", "http.public_url", "does not match"),
        ("{listen: '127.0.0.1:0', max_body_bytes: 10}", "http.max_body_bytes", "must be >= 1024"),
        ("{listen: '127.0.0.1:0', deadline: 5}", "http.deadline", "did you mean 'deadline_seconds'"),
    ],
)
def test_bad_http_settings_name_the_key_and_leave_http_off(tmp_path: Path, block: str, path: str, message: str) -> None:
    (tmp_path / "ishiki.yaml").write_text(f"http: {block}\n")
    config, errors = load_host_config(tmp_path)
    assert [e.path for e in errors] == [path], errors
    assert message in errors[0].message
    assert errors[0].line == 1
    assert config.http.listen is None or "listen" not in path
