"""Request bodies as JSON bytes: the tool definitions encoded once per distinct set, the rest as httpx would."""

from __future__ import annotations

import json

import httpx
import pytest

from ishiki_host.config.models import ModelSpec
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest, ToolSpec
from ishiki_host.gateway.providers import anthropic, openai
from ishiki_host.gateway.providers._body import ToolsJSON, json_body
from ishiki_host.testing import FakeAnthropicServer, FakeOpenAIServer

MODEL = ModelSpec("fake-model", max_tokens=256)
PARAMS = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
READ = ToolSpec("read", "Read a URL — «ünïcode» too", PARAMS)
SEND = ToolSpec("send", "Send a message", {"type": "object", "properties": {}})


def request(*tools: ToolSpec, **kw: object) -> ModelRequest:
    call = ToolCall("call_1", "read", {"url": "a"})
    messages = (Message.system("terse"), Message.user("look"), Message.assistant("", [call]), Message.tool(call, "x"))
    return ModelRequest(messages, tools=tools, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("tools", [(), (READ,), (READ, SEND)], ids=["no tools", "one tool", "two tools"])
@pytest.mark.parametrize("stream", [False, True])
def test_the_bytes_are_the_body_encode_request_makes(tools: tuple[ToolSpec, ...], stream: bool) -> None:
    asked = request(*tools, tool_choice="read" if tools else "auto", temperature=0.5)
    sent = openai.encode_body(MODEL, asked, stream=stream, options={})
    assert json.loads(sent) == openai.encode_request(MODEL, asked, stream=stream, options={})
    sent = anthropic.encode_body(MODEL, asked, stream=stream)
    assert json.loads(sent) == anthropic.encode_request(MODEL, asked, stream=stream)


def test_the_bytes_are_compact_utf8_as_httpx_would_send_them() -> None:
    sent = openai.encode_body(MODEL, request(READ), stream=False, options={})
    assert "«ünïcode»".encode() in sent  # not \u00ab escapes
    compact = json.dumps(json.loads(sent), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    assert len(sent) == len(compact)


def test_json_body_adds_each_encoded_text_under_its_name() -> None:
    added = json_body({"a": 1}, tools="[1,2]", more='{"x":null}')
    assert json.loads(added) == {"a": 1, "tools": [1, 2], "more": {"x": None}}
    assert json.loads(json_body({}, tools="[]")) == {"tools": []}
    assert json_body({"a": 1}) == b'{"a":1}'
    with pytest.raises(ValueError, match="Out of range float"):
        json_body({"a": float("nan")})  # as httpx refuses it


def test_a_tool_set_is_encoded_once_and_reused() -> None:
    encoded: list[str] = []

    def encode_one(tool: ToolSpec) -> dict[str, object]:
        encoded.append(tool.name)
        return {"name": tool.name, "parameters": dict(tool.parameters)}

    tools = ToolsJSON(encode_one)
    first = tools.text((READ, SEND))
    again = tools.text((ToolSpec("read", READ.description, PARAMS), SEND))  # a new spec over the same schema object
    assert again is first
    assert encoded == ["read", "send"]
    assert [tool["name"] for tool in json.loads(first)] == ["read", "send"]
    assert json.loads(first)[0]["parameters"] == PARAMS
    assert tools.text((SEND, READ)) != first  # another order is another list
    assert len(tools) == 2


def test_a_changed_description_or_schema_is_encoded_again() -> None:
    tools = ToolsJSON(lambda tool: [tool.description, dict(tool.parameters)])
    first = tools.text((READ,))
    assert json.loads(tools.text((ToolSpec("read", "Other words", PARAMS),)))[0][0] == "Other words"
    equal_schema = {**PARAMS}  # equal, but another object: its identity is the key, so it is encoded afresh
    assert tools.text((ToolSpec("read", READ.description, equal_schema),)) == first
    assert len(tools) == 3


def test_the_least_recently_used_tool_sets_go_beyond_the_size() -> None:
    tools = ToolsJSON(lambda tool: tool.name, size=2)
    specs = [ToolSpec(f"t{i}", "", PARAMS) for i in range(3)]
    tools.text(specs[:1])
    tools.text(specs[1:2])
    tools.text(specs[:1])  # used again: now the newest
    tools.text(specs[2:3])
    assert len(tools) == 2
    encoded: list[str] = []
    again = ToolsJSON(lambda tool: encoded.append(tool.name) or tool.name, size=2)
    for spec in (specs[0], specs[1], specs[0], specs[2], specs[0]):
        again.text((spec,))
    assert encoded == ["t0", "t1", "t2"]  # t0 stayed: t1 was the least recently used when t2 came


@pytest.mark.anyio
async def test_both_providers_send_the_tools_over_http(
    fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    asked = request(READ, SEND, tool_choice="required")
    client = openai.OpenAICompletionsAPI().create(fake_openai.provider("o", (MODEL,)), http)
    await client.generate(MODEL, asked)
    body = fake_openai.last_request.json
    assert isinstance(body, dict)
    assert [t["function"]["name"] for t in body["tools"]] == ["read", "send"]
    assert body["tool_choice"] == "required"
    assert fake_openai.last_request.headers["content-type"] == "application/json"
    other = anthropic.AnthropicMessagesAPI().create(fake_anthropic.provider("a", (MODEL,)), http)
    await other.generate(MODEL, asked)
    body = fake_anthropic.last_request.json
    assert isinstance(body, dict)
    assert [t["name"] for t in body["tools"]] == ["read", "send"]
    assert body["tools"][0]["input_schema"] == PARAMS
