"""openai-completions against the loopback fake: request shapes, answers, streams and every failure."""

from __future__ import annotations

import base64

import anyio
import httpx
import pytest

from ishiki_host.config.models import ModelSpec
from ishiki_host.core.messages import ImagePart, Message, ToolCall
from ishiki_host.core.model import ModelRequest, StreamDone, TextDelta, ToolCallDelta, ToolSpec
from ishiki_host.errors import ModelError
from ishiki_host.gateway.providers.openai import OpenAICompletionsAPI, OpenAICompletionsClient
from ishiki_host.testing import FakeOpenAIServer, ScriptedCall

pytestmark = pytest.mark.anyio

TEXT = ModelSpec("fake-model", max_tokens=256)
VISION = ModelSpec("vision", input=("text", "image"))
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()
READ = ToolSpec("read", "Read a URL", {"type": "object", "properties": {"url": {"type": "string"}}})


def client(server: FakeOpenAIServer, http: httpx.AsyncClient, **options: object) -> OpenAICompletionsClient:
    provider = server.provider("o", (TEXT, VISION), api_key="sk-test", headers={"x-extra": "1"}, options=options)
    return OpenAICompletionsAPI().create(provider, http)


def ask(text: str = "hi", **kw: object) -> ModelRequest:
    return ModelRequest((Message.system("You are terse."), Message.user(text)), **kw)  # type: ignore[arg-type]


async def fails(coro: object) -> ModelError:
    with pytest.raises(ModelError) as info:
        await coro  # type: ignore[misc]
    return info.value


async def collect(c: OpenAICompletionsClient, request: ModelRequest, model: ModelSpec = TEXT) -> list[object]:
    return [event async for event in c.stream(model, request)]


async def test_request_shape(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    call = ToolCall("call_1", "read", {"url": "a"})
    bad = ToolCall("call_2", "read", {}, raw_arguments="{", parse_error="not JSON")
    messages = (
        Message.system("persona"),
        Message.user("look", [ImagePart(PNG)]),
        Message.assistant("checking", [call, bad]),
        Message.tool(call, "contents"),
        Message.tool(bad, "arguments were not JSON", is_error=True),
    )
    request = ModelRequest(messages, tools=(READ,), tool_choice="required", temperature=0.2, stop=("END",))
    await client(fake_openai, http).generate(TEXT, request)
    sent = fake_openai.last_request
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.headers["x-extra"] == "1"
    body = sent.json
    assert body["model"] == "fake-model"
    assert body["stream"] is False
    assert body["max_tokens"] == 256
    assert body["temperature"] == 0.2
    assert body["stop"] == ["END"]
    assert body["tool_choice"] == "required"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a URL", "parameters": dict(READ.parameters)},
        }
    ]
    assert body["messages"][0] == {"role": "system", "content": "persona"}
    # the text-only model gets a note instead of the image
    assert body["messages"][1]["content"][1]["type"] == "text"
    assert "left out" in body["messages"][1]["content"][1]["text"]
    assistant = body["messages"][2]
    assert assistant["content"] == "checking"
    assert assistant["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read", "arguments": '{"url": "a"}'},
    }
    assert assistant["tool_calls"][1]["function"]["arguments"] == "{}"
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "contents"}
    assert body["messages"][4]["tool_call_id"] == "call_2"


async def test_images_go_to_vision_models(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    await client(fake_openai, http).generate(VISION, ModelRequest((Message.user("what is it?", [ImagePart(PNG)]),)))
    content = fake_openai.last_request.json["messages"][0]["content"]
    assert content == [{"type": "text", "text": "what is it?"}, {"type": "image_url", "image_url": {"url": PNG}}]


async def test_named_tool_choice_and_options(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    c = client(fake_openai, http, max_tokens_field="max_completion_tokens", stream_usage=False)
    await c.generate(TEXT, ask(tools=(READ,), tool_choice="read", max_tokens=12))
    body = fake_openai.last_request.json
    assert body["tool_choice"] == {"type": "function", "function": {"name": "read"}}
    assert body["max_completion_tokens"] == 12
    assert "max_tokens" not in body
    await collect(c, ask())
    assert "stream_options" not in fake_openai.last_request.json
    await collect(client(fake_openai, http), ask())
    assert fake_openai.last_request.json["stream_options"] == {"include_usage": True}


async def test_text_answer_with_usage(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    fake_openai.reply("Hello there", usage=(42, 7))
    result = await client(fake_openai, http).generate(TEXT, ask())
    assert result.text == "Hello there"
    assert result.finish_reason == "stop"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.estimated) == (42, 7, False)
    assert result.model == "o:fake-model"


async def test_missing_usage_is_estimated(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    fake_openai.reply("a" * 40, usage=None)
    result = await client(fake_openai, http).generate(TEXT, ask())
    assert result.usage.estimated
    assert result.usage.output_tokens == 10
    assert result.usage.input_tokens > 0


async def test_tool_calls_bad_arguments_and_unknown_names(
    fake_openai: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    calls = [ScriptedCall("read", {"url": "x"}), ScriptedCall("no_such_tool", "{"), ScriptedCall("read", "[1, 2]")]
    for stream in (False, True):
        fake_openai.reply(tool_calls=calls)
        c = client(fake_openai, http)
        if stream:
            events = await collect(c, ask(tools=(READ,)))
            result = events[-1].result  # type: ignore[attr-defined]
            assert any(isinstance(e, ToolCallDelta) for e in events)
        else:
            result = await c.generate(TEXT, ask(tools=(READ,)))
        assert result.finish_reason == "tool_calls"
        good, broken, array = result.tool_calls
        assert (good.name, dict(good.arguments), good.parse_error) == ("read", {"url": "x"}, None)
        assert broken.name == "no_such_tool"
        assert broken.raw_arguments == "{"
        assert broken.parse_error is not None
        assert "not valid JSON" in broken.parse_error
        assert array.parse_error == "arguments must be a JSON object, not array"


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 17])
async def test_stream_assembles_whatever_the_chunking(
    fake_openai: FakeOpenAIServer, http: httpx.AsyncClient, chunk_size: int | None
) -> None:
    fake_openai.reply(
        "Streaming — ストリーム 🌊 text",
        tool_calls=[ScriptedCall("read", {"url": "é"})],
        chunk_size=chunk_size,
        usage=(3, 4),
    )
    events = await collect(client(fake_openai, http), ask())
    assert isinstance(events[-1], StreamDone)
    result = events[-1].result
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Streaming — ストリーム 🌊 text"
    assert result.text == "Streaming — ストリーム 🌊 text"
    assert [dict(c.arguments) for c in result.tool_calls] == [{"url": "é"}]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 4)


@pytest.mark.parametrize("stream", [False, True])
async def test_failures_are_classified(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient, stream: bool) -> None:
    c = client(fake_openai, http)

    async def call() -> object:
        return await collect(c, ask()) if stream else await c.generate(TEXT, ask())

    fake_openai.rate_limit("4")
    error = await fails(call())
    assert (error.kind, getattr(error, "retry_after", None)) == ("rate_limited", 4)
    fake_openai.server_error(503)
    assert (await fails(call())).kind == "unavailable"
    fake_openai.error(401, "Incorrect API key provided", type="invalid_request_error")
    assert (await fails(call())).kind == "auth"
    fake_openai.context_length()
    assert (await fails(call())).kind == "context_length"
    fake_openai.error_object("The upstream model failed")
    assert (await fails(call())).kind == "bad_request"
    fake_openai.malformed()
    assert (await fails(call())).kind == "bad_request"
    fake_openai.cut()
    assert (await fails(call())).kind == "unavailable"


async def test_empty_choices(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    fake_openai.empty_choices()
    error = await fails(client(fake_openai, http).generate(TEXT, ask()))
    assert error.kind == "bad_request"
    assert "no choices" in str(error)


async def test_stream_without_done_or_finish_is_cut(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    from ishiki_host.testing import Response

    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"par"}}]}\n\n'
    fake_openai.push(Response(200, (("content-type", "text/event-stream"),), chunks=[chunk]))
    assert (await fails(collect(client(fake_openai, http), ask()))).kind == "unavailable"
    fake_openai.push(Response(200, (("content-type", "text/event-stream"),), chunks=[b"data: {not json\n\n"]))
    assert (await fails(collect(client(fake_openai, http), ask()))).kind == "bad_request"
    fake_openai.push(
        Response(
            200,
            (("content-type", "text/event-stream"),),
            chunks=[b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'],
        )
    )
    assert (await fails(collect(client(fake_openai, http), ask()))).kind == "unavailable"


async def test_a_server_that_never_answers_times_out(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.hang()
    async with httpx.AsyncClient(timeout=httpx.Timeout(0.2)) as short:
        error = await fails(client(fake_openai, short).generate(TEXT, ask()))
    assert error.kind == "unavailable"
    assert "timed out" in str(error)


async def test_connection_refused_is_unavailable(http: httpx.AsyncClient) -> None:
    server = FakeOpenAIServer().start()
    server.close()  # the port is now closed
    error = await fails(client(server, http).generate(TEXT, ask()))
    assert error.kind == "unavailable"


async def test_content_parts_and_null_content(fake_openai: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    from ishiki_host.testing import Response

    answer = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                "finish_reason": "length",
            }
        ]
    }
    fake_openai.push(Response.json(answer))
    result = await client(fake_openai, http).generate(TEXT, ask())
    assert (result.text, result.finish_reason, result.usage.estimated) == ("ab", "length", True)
    fake_openai.push(
        Response.json({"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "weird"}]})
    )
    result = await client(fake_openai, http).generate(TEXT, ask())
    assert (result.text, result.finish_reason) == ("", "other")


async def test_a_finished_stream_leaves_its_connection_open(
    fake_openai: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    c = client(fake_openai, http)
    for text in ("one", "two", "three"):
        fake_openai.reply(text)
        events = await collect(c, ask())
        assert events[-1].result.text == text  # type: ignore[attr-defined]
    assert fake_openai.connections == 1  # the body after [DONE] was read, so the connection was kept


async def test_a_body_still_open_after_done_is_given_up(
    fake_openai: FakeOpenAIServer, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from ishiki_host.gateway.providers import _http
    from ishiki_host.testing import Response

    monkeypatch.setattr(_http, "FINISH_SECONDS", 0.05)
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    held = threading.Event()
    stream = (("content-type", "text/event-stream"),)
    fake_openai.push(Response(200, stream, chunks=[chunk, b"data: [DONE]\n\n", b": more\n\n"], gate=held))
    try:
        with anyio.fail_after(30):  # a cap as a last resort: without the give-up it waits for the held chunk
            events = await collect(client(fake_openai, http), ask())
    finally:
        held.set()
    assert events[-1].result.text == "ok"  # type: ignore[attr-defined]
    fake_openai.push(Response(200, stream, chunks=[chunk, b"data: [DONE]\n\n"], cut=True))
    events = await collect(client(fake_openai, http), ask())
    assert events[-1].result.text == "ok"  # type: ignore[attr-defined]  # the cut after [DONE] is ignored
