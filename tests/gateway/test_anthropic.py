"""anthropic-messages against the loopback fake: request shapes, answers, streams and failures."""

from __future__ import annotations

import base64

import httpx
import pytest

from ishiki_host.config.models import ModelSpec
from ishiki_host.core.messages import ImagePart, Message, ToolCall
from ishiki_host.core.model import ModelRequest, StreamDone, TextDelta, ToolSpec
from ishiki_host.errors import ModelError
from ishiki_host.gateway.providers.anthropic import AnthropicMessagesAPI, AnthropicMessagesClient
from ishiki_host.testing import FakeAnthropicServer, Response, ScriptedCall

pytestmark = pytest.mark.anyio

CLAUDE = ModelSpec("claude", max_tokens=1000, input=("text", "image"))
DATA = base64.b64encode(b"\xff\xd8 fake jpeg").decode()
READ = ToolSpec("read", "Read a URL", {"type": "object", "properties": {"url": {"type": "string"}}})


def client(server: FakeAnthropicServer, http: httpx.AsyncClient) -> AnthropicMessagesClient:
    provider = server.provider("a", (CLAUDE,), api_key="sk-ant", options={"anthropic_version": "2023-06-01"})
    return AnthropicMessagesAPI().create(provider, http)


async def fails(coro: object) -> ModelError:
    with pytest.raises(ModelError) as info:
        await coro  # type: ignore[misc]
    return info.value


async def collect(c: AnthropicMessagesClient, request: ModelRequest) -> list[object]:
    return [event async for event in c.stream(CLAUDE, request)]


async def test_base_url_variants(http: httpx.AsyncClient) -> None:
    from ishiki_host.config.models import ProviderConfig

    api = AnthropicMessagesAPI()
    assert api.create(ProviderConfig("a", "anthropic-messages"), http).url == "https://api.anthropic.com/v1/messages"
    assert api.create(ProviderConfig("a", "x", base_url="http://h/v1/"), http).url == "http://h/v1/messages"


async def test_request_shape(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient) -> None:
    call = ToolCall("toolu_1", "read", {"url": "a"})
    other = ToolCall("toolu_2", "read", {"url": "b"})
    messages = (
        Message.system("persona"),
        Message.system("rules"),
        Message.user("look", [ImagePart(f"data:image/jpeg;base64,{DATA}"), ImagePart("https://example.com/x.png")]),
        Message.assistant("checking", [call, other]),
        Message.tool(call, "contents"),
        Message.tool(other, "failed", is_error=True),
        Message.system("a late note"),
        Message.user("and?"),
    )
    request = ModelRequest(messages, tools=(READ,), tool_choice="required", stop=("END",), temperature=0)
    await client(fake_anthropic, http).generate(CLAUDE, request)
    sent = fake_anthropic.last_request
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    body = sent.json
    assert body["system"] == "persona\n\nrules"
    assert body["max_tokens"] == 1000
    assert body["stop_sequences"] == ["END"]
    assert body["temperature"] == 0
    assert body["tool_choice"] == {"type": "any"}
    assert body["tools"] == [{"name": "read", "description": "Read a URL", "input_schema": dict(READ.parameters)}]
    user, assistant, results = body["messages"]
    assert user["role"] == "user"
    assert user["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": DATA}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}},
    ]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"url": "a"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"url": "b"}},
        ],
    }
    # tool results, the late system note and the next user text share one user turn
    assert results["role"] == "user"
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "failed", "is_error": True},
        {"type": "text", "text": "[system] a late note"},
        {"type": "text", "text": "and?"},
    ]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [("auto", {"type": "auto"}), ("none", {"type": "none"}), ("read", {"type": "tool", "name": "read"})],
)
async def test_tool_choice(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient, choice: str, sent: dict[str, str]
) -> None:
    await client(fake_anthropic, http).generate(
        CLAUDE, ModelRequest((Message.user("x"),), tools=(READ,), tool_choice=choice)
    )
    assert fake_anthropic.last_request.json["tool_choice"] == sent


async def test_conversation_starting_with_assistant_gets_a_user_turn(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    await client(fake_anthropic, http).generate(
        CLAUDE, ModelRequest((Message.system("s"), Message.assistant("earlier")))
    )
    messages = fake_anthropic.last_request.json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    images_off = ModelSpec("text-only")
    c = AnthropicMessagesAPI().create(fake_anthropic.provider("a", (images_off,)), http)
    await c.generate(images_off, ModelRequest((Message.user("x", [ImagePart(f"data:image/png;base64,{DATA}")]),)))
    assert "left out" in fake_anthropic.last_request.json["messages"][0]["content"][1]["text"]


async def test_answers_with_text_and_tools(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient) -> None:
    calls = [ScriptedCall("read", {"url": "x"}), ScriptedCall("mystery_tool", {})]
    fake_anthropic.reply("Let me look.", tool_calls=calls, usage=(100, 20))
    result = await client(fake_anthropic, http).generate(CLAUDE, ModelRequest((Message.user("x"),)))
    assert result.text == "Let me look."
    assert result.finish_reason == "tool_calls"
    assert [(c.id, c.name, dict(c.arguments)) for c in result.tool_calls] == [
        ("toolu_1_0", "read", {"url": "x"}),
        ("toolu_1_1", "mystery_tool", {}),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.estimated) == (100, 20, False)


async def test_cache_tokens_count_as_input(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient) -> None:
    answer = {
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "max_tokens",
        "usage": {
            "input_tokens": 5,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 10,
            "output_tokens": 2,
        },
    }
    fake_anthropic.push(Response.json(answer))
    result = await client(fake_anthropic, http).generate(CLAUDE, ModelRequest((Message.user("x"),)))
    assert (result.usage.input_tokens, result.usage.output_tokens, result.finish_reason) == (115, 2, "length")


@pytest.mark.parametrize("chunk_size", [None, 1, 9])
async def test_stream(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient, chunk_size: int | None) -> None:
    calls = [ScriptedCall("read", {"url": "ü"}), ScriptedCall("read", "{")]
    fake_anthropic.reply("Reading — 読む", tool_calls=calls, usage=(30, 12), chunk_size=chunk_size)
    events = await collect(client(fake_anthropic, http), ModelRequest((Message.user("x"),)))
    result = events[-1].result  # type: ignore[attr-defined]
    assert isinstance(events[-1], StreamDone)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Reading — 読む"
    assert result.text == "Reading — 読む"
    good, broken = result.tool_calls
    assert dict(good.arguments) == {"url": "ü"}
    assert broken.parse_error is not None
    assert broken.raw_arguments == "{"
    assert result.finish_reason == "tool_calls"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 12)


async def test_stream_without_usage_is_estimated(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient) -> None:
    fake_anthropic.reply("some words here", usage=None)
    events = await collect(client(fake_anthropic, http), ModelRequest((Message.user("x"),)))
    assert events[-1].result.usage.estimated  # type: ignore[attr-defined]


@pytest.mark.parametrize("stream", [False, True])
async def test_failures(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient, stream: bool) -> None:
    c = client(fake_anthropic, http)
    request = ModelRequest((Message.user("x"),))

    async def call() -> object:
        return await collect(c, request) if stream else await c.generate(CLAUDE, request)

    fake_anthropic.overloaded()
    assert (await fails(call())).kind == "unavailable"
    fake_anthropic.rate_limit("2")
    assert (await fails(call())).kind == "rate_limited"
    fake_anthropic.context_length()
    assert (await fails(call())).kind == "context_length"
    fake_anthropic.error(401, "invalid x-api-key", type="authentication_error")
    assert (await fails(call())).kind == "auth"
    fake_anthropic.malformed()
    assert (await fails(call())).kind == "bad_request"
    fake_anthropic.cut()
    assert (await fails(call())).kind == "unavailable"


async def test_error_event_mid_stream(fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient) -> None:
    events = [
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n',
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    ]
    fake_anthropic.push(Response(200, (("content-type", "text/event-stream"),), chunks=events))
    assert (
        await fails(collect(client(fake_anthropic, http), ModelRequest((Message.user("x"),))))
    ).kind == "unavailable"


async def test_a_finished_stream_leaves_its_connection_open(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    c = client(fake_anthropic, http)
    for text in ("one", "two", "three"):
        fake_anthropic.reply(text)
        events = await collect(c, ModelRequest((Message.user("x"),)))
        assert events[-1].result.text == text  # type: ignore[attr-defined]
    assert fake_anthropic.connections == 1  # the body after message_stop was read, so the connection was kept
