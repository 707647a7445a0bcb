"""Reading config YAML: lines of keys, limits against hostile files, ``${VAR}`` expansion."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.config.envvars import expand_vars
from ishiki_host.config.yamlio import MAX_DEPTH, MAX_FILE_BYTES, format_path, load_yaml, parse_yaml
from ishiki_host.errors import ProfileInvalid


def parse(text: str, env: dict[str, str] | None = None) -> tuple[object, dict[tuple[object, ...], int], list[str]]:
    doc = parse_yaml(text, "f.yml", ProfileInvalid, env)
    return doc.data, doc.lines, [e.describe() for e in doc.errors]


def test_lines_of_nested_keys_and_list_items() -> None:
    doc = parse_yaml("a:\n  b:\n    - x\n    - y: 1\nc: 2\n", "f.yml", ProfileInvalid)
    assert doc.data == {"a": {"b": ["x", {"y": 1}]}, "c": 2}
    assert doc.line(("a", "b", 1, "y")) == 4
    assert doc.line(("a", "b", 0)) == 3
    assert doc.line(("c",)) == 5
    assert doc.line(("a", "nope", "deeper")) == 1  # falls back to the longest known prefix


def test_keys_are_kept_as_written_and_dates_stay_strings() -> None:
    data, _, _ = parse("on: yes\n1: one\nnull: x\nwhen: 2024-01-31\n")
    assert data == {"on": True, "1": "one", "null": "x", "when": "2024-01-31"}


def test_duplicate_key_is_reported_with_both_lines() -> None:
    _, _, errors = parse("model: a\nmode: channel\nmodel: b\n")
    assert errors == ["f.yml:3: model: duplicate key 'model' (first at line 1)"]


def test_merge_keys_and_aliases() -> None:
    data, _, errors = parse("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\nlist: [*b]\n")
    assert data == {"base": {"x": 1, "y": 2}, "other": {"x": 1, "y": 3}, "list": [{"x": 1, "y": 2}]}
    assert errors == []


def test_format_path() -> None:
    assert format_path(("channels", "console:local", 0)) == "channels.console:local[0]"
    assert format_path((0, "a")) == "[0].a"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2\n", "invalid YAML"),
        ("a: *nowhere\n", "unknown alias"),
        ("a: &x [*x]\n", "refers to itself"),
        ("a: !!python/object:os.system x\n", "unsupported YAML tag"),
        ("a: !custom x\n", "unsupported YAML tag"),
        ("---\na: 1\n---\nb: 2\n", "several YAML documents"),
        ("? [a, b]\n: c\n", "a key must be plain text"),
        ("a: !!int twelve\n", "bad int value"),
        ("a:\n  <<: 3\n", "a merge key '<<' takes a mapping"),
    ],
)
def test_malformed_documents_raise_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ProfileInvalid, match=message) as caught:
        parse_yaml(text, "f.yml", ProfileInvalid)
    assert caught.value.file == "f.yml"
    assert caught.value.line is not None


def test_deep_block_nesting_is_refused_without_recursion_error() -> None:
    text = "\n".join("  " * i + "k:" for i in range(MAX_DEPTH + 5))
    with pytest.raises(ProfileInvalid, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_yaml(text, "f.yml", ProfileInvalid)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_flow_nesting_is_refused(depth: int) -> None:
    with pytest.raises(ProfileInvalid, match="nest"):
        parse_yaml("a: " + "[" * depth + "]" * depth, "f.yml", ProfileInvalid)


def test_nesting_through_aliases_counts() -> None:
    deep = "[" * 40 + "]" * 40
    text = f"a: &a {deep}\nb: &b [*a, [[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
    with pytest.raises(ProfileInvalid, match="nested deeper"):
        parse_yaml(text, "f.yml", ProfileInvalid)


def test_alias_bomb_is_refused() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    with pytest.raises(ProfileInvalid, match="alias bomb"):
        parse_yaml("\n".join(lines), "f.yml", ProfileInvalid)


def test_file_limits(tmp_path: Path) -> None:
    big = tmp_path / "big.yml"
    with big.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    with pytest.raises(ProfileInvalid, match=r"file too large \(52,428,800 bytes; the limit is 1,048,576\)"):
        load_yaml(big, "big.yml", ProfileInvalid)
    just_over = tmp_path / "over.yml"
    just_over.write_text("a: " + "x" * MAX_FILE_BYTES)
    with pytest.raises(ProfileInvalid, match="file too large"):
        load_yaml(just_over, "over.yml", ProfileInvalid)


def test_binary_and_non_utf8_files(tmp_path: Path) -> None:
    binary = tmp_path / "bin.yml"
    binary.write_bytes(os.urandom(64) + b"\0" + os.urandom(64))
    with pytest.raises(ProfileInvalid, match="binary file"):
        load_yaml(binary, "bin.yml", ProfileInvalid)
    latin = tmp_path / "latin.yml"
    latin.write_bytes("a: 1\nname: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ProfileInvalid, match=r"not UTF-8 text \(byte 0xe9") as caught:
        load_yaml(latin, "latin.yml", ProfileInvalid)
    assert caught.value.line == 2


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProfileInvalid, match="not a regular file"):
        load_yaml(tmp_path, "dir", ProfileInvalid)
    with pytest.raises(ProfileInvalid, match="cannot read"):
        load_yaml(tmp_path / "nope.yml", "nope.yml", ProfileInvalid)


def test_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert load_yaml(path, "bom.yml", ProfileInvalid).data == {"a": 1}


def test_env_expansion_of_values_only() -> None:
    env = {"TOKEN": "s3cret", "EMPTY": "", "PORT": "8080"}
    text = (
        "token: ${TOKEN}\nurl: http://h:${PORT}/v1\nport: ${PORT}\nquoted: '${PORT}'\n"
        "fallback: ${NOPE:-dflt}\nempty: ${EMPTY:-used}\nliteral: $${TOKEN}\n${TOKEN}: key\nblank: ${EMPTY}\n"
    )
    data, _, errors = parse(text, env)
    assert errors == []
    assert data == {
        "token": "s3cret",
        "url": "http://h:8080/v1",
        "port": 8080,
        "quoted": "8080",
        "fallback": "dflt",
        "empty": "used",
        "literal": "${TOKEN}",
        "${TOKEN}": "key",
        "blank": "",
    }


def test_unset_variable_names_variable_file_line_and_key() -> None:
    _, _, errors = parse("a: 1\nproviders:\n  x:\n    apiKey: ${MISSING_KEY}\n", {})
    assert errors == [
        "f.yml:4: providers.x.apiKey: environment variable MISSING_KEY is not set "
        "(write ${MISSING_KEY:-default} to give a default)"
    ]


def test_expansion_is_off_without_env() -> None:
    data, _, _ = parse("a: ${HOME}\n")
    assert data == {"a": "${HOME}"}


@given(st.text().filter(lambda t: "$" not in t))
def test_text_without_dollar_is_unchanged(text: str) -> None:
    assert expand_vars(text, {"A": "b"}) == (text, [])


@given(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
    st.text(min_size=1).filter(lambda v: "\0" not in v),
    st.text().filter(lambda t: "$" not in t),
)
def test_reference_expands_to_the_value(name: str, value: str, around: str) -> None:
    assert expand_vars(f"{around}${{{name}}}{around}", {name: value}) == (f"{around}{value}{around}", [])
    result, problems = expand_vars(f"${{{name}}}", {})
    assert result == f"${{{name}}}"
    assert problems
    assert name in problems[0]
