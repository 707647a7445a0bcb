"""Both text protocols against a corpus of real-looking model answers, broken ones included.

Each ``corpus/<protocol>/*.txt`` file is ``expect: <json>``, a ``---`` line, then the answer verbatim. The
expectation lists the calls (name and arguments, or ``parse_error``), ``ok``, and optionally the exact text,
thoughts, whether the turn ends, and substrings the notes must hold (``"notes": []`` means none at all).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.engines.toolcall import json_protocol, xml_protocol
from ishiki_host.engines.toolcall._answer import ParsedAnswer

CORPUS = Path(__file__).parent / "corpus"
TOOLS = ["finish", "read", "search_memory", "send_message", "set_beat", "wait", "web_fetch"]
PARSERS = {"json": json_protocol.parse_answer, "xml": xml_protocol.parse_answer}


def _load(path: Path) -> tuple[dict[str, Any], str]:
    head, _, answer = path.read_text(encoding="utf-8").partition("\n---\n")
    assert head.startswith("expect: "), f"{path.name}: the first line must be 'expect: <json>'"
    return json.loads(head.removeprefix("expect: ")), answer.removesuffix("\n")


def _cases(protocol: str) -> list[Any]:
    files = sorted((CORPUS / protocol).glob("*.txt"))
    return [pytest.param(protocol, path, id=f"{protocol}/{path.stem}") for path in files]


def check(parsed: ParsedAnswer, expect: dict[str, Any]) -> None:
    """Compare a parse result with a corpus expectation."""
    assert parsed.ok is expect["ok"], parsed.notes
    got = [
        {"name": c.name, "parse_error": True} if c.parse_error else {"name": c.name, "arguments": dict(c.arguments)}
        for c in parsed.tool_calls
    ]
    assert got == expect["calls"]
    assert [c.id for c in parsed.tool_calls] == [f"call_3_{i}" for i in range(len(got))]
    if "text" in expect:
        assert parsed.text == expect["text"]
    if "thoughts" in expect:
        assert parsed.thoughts == expect["thoughts"]
    if "ends_turn" in expect:
        assert parsed.ends_turn is expect["ends_turn"]
    if "notes" in expect:
        if not expect["notes"]:
            assert parsed.notes == ()
        for fragment in expect["notes"]:
            assert any(fragment in note for note in parsed.notes), (fragment, parsed.notes)
    if not parsed.ok:
        assert parsed.feedback() or any(c.parse_error for c in parsed.tool_calls)


def test_corpus_is_large_enough() -> None:
    for protocol in PARSERS:
        assert len(list((CORPUS / protocol).glob("*.txt"))) >= 30, protocol


@pytest.mark.parametrize(("protocol", "path"), _cases("json") + _cases("xml"))
def test_corpus_case(protocol: str, path: Path) -> None:
    expect, answer = _load(path)
    parsed = PARSERS[protocol](answer, expect.get("tools", TOOLS), step=3)
    check(parsed, expect)


@pytest.mark.parametrize(("protocol", "path"), _cases("json") + _cases("xml"))
def test_corpus_case_with_windows_newlines(protocol: str, path: Path) -> None:
    """The same answers written with CRLF line ends read the same, but for the CRs they keep."""
    expect, answer = _load(path)
    lf = PARSERS[protocol](answer, expect.get("tools", TOOLS), step=3)
    crlf = PARSERS[protocol](answer.replace("\n", "\r\n"), expect.get("tools", TOOLS), step=3)
    assert crlf.ok is lf.ok
    assert _without_cr(crlf.text) == lf.text
    assert [(c.name, _without_cr(dict(c.arguments)), bool(c.parse_error)) for c in crlf.tool_calls] == [
        (c.name, dict(c.arguments), bool(c.parse_error)) for c in lf.tool_calls
    ]


def _without_cr(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\r\n", "\n")
    if isinstance(value, dict):
        return {k: _without_cr(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_cr(v) for v in value]
    return value


@pytest.mark.parametrize("path", [c.values[1] for c in _cases("xml")], ids=lambda p: p.stem)
def test_xml_corpus_streamed_in_random_chunks(path: Path) -> None:
    _, answer = _load(path)
    whole = xml_protocol.parse_answer(answer, TOOLS, step=3)
    rng = random.Random(path.name)
    for _ in range(25):
        parser = xml_protocol.ToolCallStreamParser(TOOLS, step=3)
        pos = 0
        while pos < len(answer):
            size = rng.choice([1, 1, 2, 3, 5, 8, 13, 40])
            parser.feed(answer[pos : pos + size])
            pos += size
        parser.finish()
        assert parser.answer() == whole


def test_unknown_tools_are_accepted_when_no_catalogue_is_given() -> None:
    parsed = json_protocol.parse_answer('{"actions": [{"function": "anything", "params": {}}]}')
    assert [c.name for c in parsed.tool_calls] == ["anything"]
    parsed = xml_protocol.parse_answer('<tool_call>{"name": "anything"}</tool_call>')
    assert [c.name for c in parsed.tool_calls] == ["anything"]


def test_windows_newlines_inside_strings_are_kept_as_written() -> None:
    answer = '```json\r\n{"actions": [{"function": "send_message", "params": {"text": "a\r\nb"}}]}\r\n```\r\n'
    parsed = json_protocol.parse_answer(answer, TOOLS)
    assert parsed.ok
    assert parsed.tool_calls[0].arguments == {"text": "a\r\nb"}
    answer = '<tool_call>\r\n{"name": "send_message", "arguments": {"text": "a\r\nb"}}\r\n</tool_call>\r\n'
    parsed = xml_protocol.parse_answer(answer, TOOLS)
    assert parsed.ok
    assert parsed.tool_calls[0].arguments == {"text": "a\r\nb"}
    assert parsed.text == ""


def test_id_prefix_makes_ids_unique_across_turns() -> None:
    parsed = xml_protocol.parse_answer('<tool_call>{"name": "finish"}</tool_call>', step=2, id_prefix="t7")
    assert parsed.tool_calls[0].id == "t7_2_0"
    parsed = json_protocol.parse_answer('{"actions": [{"function": "finish"}]}', step=2, id_prefix="t7")
    assert parsed.tool_calls[0].id == "t7_2_0"
