"""Whatever a model answers, a real host ends the turn cleanly: every tool call gets a result, a tool runs only
with arguments its schema accepts, and every failure is a classified error.

Each example runs a real host (built-in context and wakeup engines, the fake channel) whose model, a loopback
OpenAI server, gives fuzzed answers: native tool calls whose arguments are any text (broken JSON included) and
whose names may be unknown, or, for the ``json`` and ``xml`` protocols, text made of protocol fragments,
action blocks calling the ``probe`` tool with any parameters, and prose.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ishiki_host import errors
from ishiki_host.testing import Reply, ScriptedCall, TestHost

PROFILE = "model: default\nchannels:\n  fake:bot: ['*']\nextends:\n  probe: {}\n"
ENGINES = {"native": "", "json": "toolcall: {engine: json}\n", "xml": "toolcall: {engine: xml}\n"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**65) | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
params = st.one_of(
    st.fixed_dictionaries({"count": st.integers(-3, 10)}, optional={"label": st.text(max_size=60)}),
    st.dictionaries(st.sampled_from(["count", "label", "extra", ""]), json_values, max_size=3),
)
BROKEN = ['{"count": 1', '{"count": }', "{'count': 2}", "[1, 2]", "null", "", "{", '{"count": 1}}', "\x00", "🎉"]
raw_arguments = st.one_of(params.map(json.dumps), st.sampled_from(BROKEN), st.text(max_size=40))
tool_names = st.sampled_from(["probe", "probe", "probe", "send_message", "finish", "nope", "", "read"])
native_answers = st.lists(
    st.lists(st.builds(ScriptedCall, tool_names, raw_arguments), min_size=1, max_size=3).map(
        lambda calls: Reply(tool_calls=tuple(calls))
    ),
    max_size=4,
)


def json_block(action: Any) -> str:
    return "```json\n" + json.dumps({"actions": [action]}) + "\n```"


def xml_block(action: Any) -> str:
    return "<tool_call>\n" + json.dumps(action) + "\n</tool_call>"


actions = st.builds(lambda n, p: {"function": n, "params": p, "name": n, "arguments": p}, tool_names, params)
FRAGMENTS = ["<tool_call>", "</tool_call>", "```json", "```", "{", "}", "[", '"actions"', "<think>", "</think>",
             '{"function": "probe", "params": {"count": 3}}', "\n", " ", "hello", "ü🎉中", "null", ","]  # fmt: skip
fragments = st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join)


def text_answers(block: Any) -> Any:
    piece = st.one_of(fragments, actions.map(block), st.text(max_size=30))
    return st.lists(st.lists(piece, min_size=1, max_size=4).map(lambda parts: Reply("\n".join(parts))), max_size=4)


def check(host_run: Any, profile: str, answers: list[Reply]) -> None:
    async def body(th: TestHost) -> None:
        delivery = await th.channel().say("please count the apples")
        with anyio.fail_after(30):
            await delivery.settled()

    entries, unexpected = host_run(profile, body, answers=answers)
    ends = host_run.turn_ends(entries)
    assert ends, "no turn ran"
    for end in ends:
        assert end["name"] in ("turn.done", "turn.failed"), end
        if end["name"] == "turn.failed":
            assert issubclass(getattr(errors, end["error"]), errors.IshikiError), end
    assert host_run.unanswered_calls(entries) == []
    assert all(host_run.schema_valid(args) for args in host_run.probed), host_run.probed
    assert unexpected == []


FUZZ = settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(answers=native_answers)
def test_native_tool_calls_with_any_arguments(host_run: Any, answers: list[Reply]) -> None:
    host_run.answers.fallback = Reply(tool_calls=(ScriptedCall("finish", {}),))
    check(host_run, PROFILE + ENGINES["native"], answers)


@FUZZ
@given(answers=text_answers(json_block))
def test_json_protocol_answers_of_any_shape(host_run: Any, answers: list[Reply]) -> None:
    host_run.answers.fallback = Reply("")
    check(host_run, PROFILE + ENGINES["json"], answers)


@FUZZ
@given(answers=text_answers(xml_block))
def test_xml_protocol_answers_of_any_shape(host_run: Any, answers: list[Reply]) -> None:
    host_run.answers.fallback = Reply("")
    check(host_run, PROFILE + ENGINES["xml"], answers)
