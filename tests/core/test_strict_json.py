from __future__ import annotations

import pytest

from ishiki_host.core.entries import Entry
from ishiki_host.core.strict_json import loads_strict


def test_plain_json_reads_as_json_does() -> None:
    assert loads_strict('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "a": 2}', "duplicate keys ['a']"),
        ('{"b": {"c": 1, "c": 1}}', "duplicate keys ['c']"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ("[Infinity]", "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
    ],
)
def test_duplicate_keys_and_non_finite_numbers_are_refused(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        loads_strict(text)


@pytest.mark.parametrize(
    ("upto", "expected"), [(7, 7), (7.9, 7), ("12", 12), ("x", 0), (None, 0), (True, 0), (float("inf"), 0)]
)
def test_entry_upto_is_an_id_or_zero(upto: object, expected: int) -> None:
    assert Entry(id=1, type="compact", ts=0.0, data={"upto": upto}).upto == expected
