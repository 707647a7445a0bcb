"""What a step reuses from the last one: the redacted window (``Redaction``) and the encoded messages
(``MessagesJSON`` behind the ``openai-completions`` body). Over random windows that grow, shrink and change level,
each equals what is made anew (the second over seeded random windows, some with a message made anew in the
middle)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.addresses.ids import Target
from ishiki_host.config.models import ModelSpec
from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import Message, ToolCall
from ishiki_host.core.model import ModelRequest
from ishiki_host.gateway.providers import anthropic, openai
from ishiki_host.runtime.redaction import Redaction, hide_above

LEVELS = ("owner", "trusted", "untrusted")


def entry(number: int, kind: int, level: str) -> Entry:
    if kind == 0:
        source = {"platform": "s", "selfId": "1", "channelId": f"g{number % 2}"}
        data: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": "said"}], "source": source}
    elif kind == 1:
        call = {"id": f"c{number}", "name": "send_message", "arguments": {"messages": ["hi"]}}
        data = {"role": "assistant", "parts": [{"type": "text", "text": "thought"}], "tool_calls": [call]}
    else:
        data = {"role": "tool", "parts": [{"type": "text", "text": "secret"}], "tool_call_id": f"c{number - 1}"}
    return Entry(number, "message", 0.0, {**data, "trust": level}, 1)


STEPS = st.lists(
    st.tuples(st.integers(0, 4), st.booleans(), st.sampled_from(LEVELS), st.booleans()), min_size=1, max_size=30
)


@settings(max_examples=150, deadline=None)
@given(steps=STEPS, kinds=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(LEVELS)), min_size=60, max_size=60))
def test_a_redacted_window_kept_between_steps_equals_one_redacted_anew(
    steps: list[tuple[int, bool, str, bool]], kinds: list[tuple[int, str]]
) -> None:
    log = [entry(number, kind, level) for number, (kind, level) in enumerate(kinds, 1)]
    redaction, start, end = Redaction(), 0, 0
    for grow, slide, level, cross in steps:
        end = min(len(log), end + grow)
        start = min(end, start + 3) if slide else start
        window = log[start:end]
        chats = {Target("s:1", "g0")} if cross else None
        assert redaction(window, level, chats) == hide_above(window, level, chats)  # type: ignore[arg-type]


def message(number: int) -> Message:
    call = ToolCall(f"c{number}", "send_message", {"messages": [f"reply {number}"]})
    made = (
        Message.user(f"message {number} é"),
        Message("assistant", (), (call,)),
        Message.tool(call, "ok"),
        Message.user(f"and {number}"),  # a second user message in a row: merged into one turn by anthropic
        Message("assistant", (), ()),  # no blocks at all: left out
    )
    return made[number % 5]


def openai_bodies(model: ModelSpec, request: ModelRequest) -> tuple[Any, Any]:
    spliced = json.loads(openai.encode_body(model, request, stream=False, options={}))
    return spliced, openai.encode_request(model, request, stream=False, options={})


def anthropic_bodies(model: ModelSpec, request: ModelRequest) -> tuple[Any, Any]:
    spliced = json.loads(anthropic.encode_body(model, request, stream=False))
    return spliced, anthropic.encode_request(model, request, stream=False)


@pytest.mark.parametrize("bodies", [openai_bodies, anthropic_bodies])
@pytest.mark.parametrize("seed", range(12))
def test_a_body_spliced_from_messages_encoded_before_equals_one_encoded_anew(seed: int, bodies: Any) -> None:
    rng, model = random.Random(seed), ModelSpec("m")
    for _ in range(15):
        conversation = [message(number) for number in range(200)]
        start = end = 0
        for _ in range(rng.randint(1, 20)):
            end = min(len(conversation), end + rng.randint(0, 5))
            start = min(end, start + rng.choice((0, 0, 1, 3)))
            edit = rng.randint(-1, 6)
            if 0 <= edit < end - start:  # a message in the middle made anew (a placeholder, say)
                conversation[start + edit] = Message.user(f"hidden {edit}")
            system = Message.system(rng.choice(("persona", f"persona at {end}")))
            request = ModelRequest(messages=(system, *conversation[start:end]))
            spliced, anew = bodies(model, request)
            assert spliced == anew
