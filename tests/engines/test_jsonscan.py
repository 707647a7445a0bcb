"""The string-aware JSON scanner and the safe repairs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.engines.toolcall._jsonscan import JsonRepairError, JsonScanner, loads_lenient, repair_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=15,
)


@pytest.mark.parametrize(
    ("raw", "value", "repairs"),
    [
        ('{"a": 1,}', {"a": 1}, ["trailing comma"]),
        ("[1, 2, ]", [1, 2], ["trailing comma"]),
        ('{"a": [1, 2', {"a": [1, 2]}, ["unclosed bracket"]),
        ('{"a": [1, 2,', {"a": [1, 2]}, ["trailing comma", "unclosed bracket"]),
        ('{"a": [1, 2}', {"a": [1, 2]}, ["mismatched bracket"]),
        ('{"a": 1}}', {"a": 1}, ["extra closing bracket"]),
        ('{"a": "x\ny"}', {"a": "x\ny"}, ["raw control character in a string"]),
        ('{"a": "tab\there"}', {"a": "tab\there"}, ["raw control character in a string"]),
        ('{"a": "\\d+"}', {"a": "\\d+"}, ["invalid escape in a string"]),
        ('{"a": "it\\\'s"}', {"a": "it's"}, []),
        ("{'a': 'say \"hi\"'}", {"a": 'say "hi"'}, ["single-quoted string"]),
        ('{"a": True, "b": None, "c": False}', {"a": True, "b": None, "c": False}, ["Python literal"]),
        ('{"a": 1 // one\n, "b": /* two */ 2}', {"a": 1, "b": 2}, ["comment"]),
        ('{"url": "https://x.org/a//b", "c": "/* not a comment */"}', None, []),
    ],
)
def test_repairs(raw: str, value: Any, repairs: list[str]) -> None:
    got, made = loads_lenient(raw)
    assert got == (json.loads(raw) if value is None else value)
    assert made == repairs


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"a": "cut off', "cut off inside a string"),
        ('{"a": "ends with a backslash\\', "cut off inside a string"),
        ('{"a":', "invalid JSON"),
        ('{"a"', "invalid JSON"),
        ('{"a": tru', "invalid JSON"),
        ("{'it's': 1}", "cut off inside a string"),
        ("not json at all {", "invalid JSON"),
    ],
)
def test_what_is_never_repaired(raw: str, reason: str) -> None:
    with pytest.raises(JsonRepairError, match=reason):
        loads_lenient(raw)


def test_repair_json_reports_nothing_for_valid_json() -> None:
    assert repair_json('{"a": [1, {"b": "c"}]}') == ('{"a": [1, {"b": "c"}]}', [])


@given(json_values)
def test_valid_json_is_read_unchanged(value: Any) -> None:
    assert loads_lenient(json.dumps(value)) == (value, [])
    assert json.loads(repair_json(json.dumps(value, ensure_ascii=False))[0]) == value


@given(st.dictionaries(st.text(), json_values, max_size=4), st.text(" \n\tabc<>}{"), st.data())
def test_scanner_finds_the_end_whatever_the_chunks(value: dict[str, Any], tail: str, data: st.DataObject) -> None:
    document = json.dumps(value, ensure_ascii=False)
    text = document + tail
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    scanner = JsonScanner()
    found = None
    for cut in [*cuts, len(text)]:
        found = scanner.scan(text[:cut])
        if found is not None:
            break
    assert found == len(document)
    assert not scanner.in_string


def test_scanner_skips_brackets_in_strings_and_comments() -> None:
    text = '{"a": "}]", \'b\': "\\"}", /* } */ "c": [1] // ]\n}tail'
    assert JsonScanner().scan(text) == len(text) - len("tail")


def test_scanner_stops_at_a_fence_line_outside_strings() -> None:
    text = '{"a": "```\n```"\n```\nafter'
    scanner = JsonScanner(stop_at_fence=True)
    assert scanner.scan(text) == text.index("```\nafter")
    assert scanner.fenced


def test_scanner_waits_for_a_split_comment_or_escape() -> None:
    scanner = JsonScanner()
    assert scanner.scan('{"a": 1 /') is None
    assert scanner.scan('{"a": 1 /* } */') is None
    assert scanner.scan('{"a": 1 /* } */ }') == len('{"a": 1 /* } */ }')
    scanner = JsonScanner()
    assert scanner.scan('{"a": "\\') is None
    assert scanner.in_string
    assert scanner.scan('{"a": "\\"}"}') == len('{"a": "\\"}"}')
