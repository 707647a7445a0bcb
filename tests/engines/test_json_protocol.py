"""The JSON protocol: rendering the catalogue and history, and reading back what it renders."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.core.messages import ImagePart, Message, ToolCall
from ishiki_host.core.model import ModelRequest, ToolSpec
from ishiki_host.engines.toolcall import json_protocol

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)
names = st.from_regex(r"[a-z][a-z0-9_]{0,24}", fullmatch=True)
calls = st.lists(
    st.builds(lambda n, a: ToolCall("x", n, a), names, st.dictionaries(st.text(), json_values, max_size=4)),
    max_size=4,
)
prose = st.text(st.characters(blacklist_characters="{[`<", blacklist_categories=("Cs",)), max_size=60)

SEND = ToolSpec(
    "send_message",
    "Send a message to the channel.",
    {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to say."},
            "mood": {"type": "string", "enum": ["calm", "happy"], "default": "calm"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
            "delay": {"type": ["number", "null"], "minimum": 0, "examples": [1.5]},
            "meta": {"type": "object", "properties": {"a": {"type": "integer"}}},
        },
        "required": ["text"],
    },
)
FINISH = ToolSpec("finish", "End the turn.")


@given(calls, json_values, prose, prose)
def test_rendered_actions_parse_back_to_the_same_calls(
    expected: list[ToolCall], thoughts: Any, before: str, after: str
) -> None:
    answer = f"{before}\n{json_protocol.render_actions(expected, thoughts)}\n{after}"
    parsed = json_protocol.parse_answer(answer, step=4)
    assert parsed.ok
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [(c.name, c.arguments) for c in expected]
    assert [c.id for c in parsed.tool_calls] == [f"call_4_{i}" for i in range(len(expected))]
    assert parsed.thoughts == thoughts
    assert parsed.notes == ()
    assert parsed.text == "\n\n".join(p for p in (before.strip(), after.strip()) if p)


def test_catalogue_lists_tools_readably() -> None:
    section = json_protocol.render_catalogue([SEND, FINISH])
    assert "```json" in section
    assert '"actions": []' in section
    assert "### send_message\nSend a message to the channel.\nParameters:" in section
    assert "- text (string, required): What to say." in section
    assert '- mood (string): one of "calm", "happy"; default "calm"' in section
    assert "- tags (array of string): max items 5" in section
    assert "- delay (number or null): at least 0; e.g. 1.5" in section
    assert '- meta (schema {"type":"object","properties":{"a":{"type":"integer"}}})' in section
    assert "### finish\nEnd the turn.\nParameters: none" in section


def test_catalogue_follows_tool_choice() -> None:
    assert "at least one function" in json_protocol.render_catalogue([FINISH], tool_choice="required")
    assert 'must call the function "finish"' in json_protocol.render_catalogue([FINISH], tool_choice="finish")
    none = json_protocol.render_catalogue([FINISH], tool_choice="none")
    assert "### finish" not in none
    assert "No functions are available" in none
    assert "No functions are available" in json_protocol.render_catalogue([])


def test_history_renders_actions_and_merged_observations() -> None:
    call_a = ToolCall("c1", "read", {"path": "a"})
    call_b = ToolCall("c2", "send_message", {"text": "hi"})
    bad = ToolCall("c3", "read", {}, raw_arguments="{oops", parse_error="not JSON")
    image = ImagePart("asset://img/1.png")
    history = [
        Message.system("persona"),
        Message.user("hello"),
        Message.assistant("Let me look.", [call_a, call_b]),
        Message("tool", (Message.tool(call_a, "has ``` inside").parts[0], image), tool_call_id="c1", tool_name="read"),
        Message.tool(call_b, "boom", is_error=True),
        Message.assistant("", [bad]),
        Message.tool(bad, "arguments not JSON", is_error=True),
        Message.assistant("All done."),
    ]
    rendered = json_protocol.render_history(history)
    assert [m.role for m in rendered] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert rendered[:2] == tuple(history[:2])
    assert rendered[2].text.startswith("Let me look.\n\n```json\n")
    assert json_protocol.parse_answer(rendered[2].text).tool_calls[1].arguments == {"text": "hi"}
    observation = rendered[3].text
    assert "#1 read: ok\n````\nhas ``` inside\n````" in observation
    assert "#2 send_message: error\n```\nboom\n```" in observation
    assert rendered[3].images == (image,)
    assert json.loads(rendered[4].text.split("\n")[1])["actions"][0]["params"] == "{oops"
    assert rendered[6] == history[-1]
    assert all(not m.tool_calls and m.role != "tool" for m in rendered)


def test_request_is_rewritten_for_a_model_without_tools() -> None:
    request = ModelRequest(messages=(Message.system("You are Ann."), Message.user("hi")), tools=(SEND,))
    rewritten = json_protocol.render_request(request)
    assert rewritten.tools == ()
    assert rewritten.messages[0].text.startswith("You are Ann.\n\n## How to act")
    assert "### send_message" in rewritten.messages[0].text
    assert rewritten.messages[1:] == request.messages[1:]
    bare = json_protocol.render_request(ModelRequest(messages=(Message.user("hi"),), tools=(SEND,)))
    assert [m.role for m in bare.messages] == ["system", "user"]


def test_feedback_and_end_of_turn() -> None:
    done = json_protocol.parse_answer('{"actions": []}')
    assert done.ends_turn
    assert done.feedback() is None
    unread = json_protocol.parse_answer("just chatting")
    assert not unread.ends_turn
    assert unread.text == "just chatting"
    assert unread.feedback() is not None
    assert "```json" in unread.feedback()
