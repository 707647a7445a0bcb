"""The JavaScript examples in docs/codemode.md run, and return the JSON shown after each of them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.tools.codemode import run_program

DOC = Path(__file__).resolve().parents[3] / "docs" / "codemode.md"
EXAMPLE = re.compile(r"```js\n(?P<code>.*?)```\s*```json\n(?P<result>.*?)```", re.DOTALL)


async def get_weather(args: dict[str, Any]) -> dict[str, Any]:
    return {"city": args["city"], "rain": True, "celsius": 18}


async def list_events(args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"title": "Tea ceremony", "outdoor": False}, {"title": "Picnic", "outdoor": True}]


async def read_note(args: dict[str, Any]) -> dict[str, Any]:
    raise KeyError(args["id"])


TOOLS = {"get_weather": get_weather, "list_events": list_events, "read_note": read_note}
EXAMPLES = [(match["code"], match["result"]) for match in EXAMPLE.finditer(DOC.read_text(encoding="utf-8"))]


def test_the_doc_has_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.anyio
@pytest.mark.parametrize(("code", "expected"), EXAMPLES)
async def test_a_documented_example_returns_what_the_doc_says(code: str, expected: str) -> None:
    result = await run_program(code, TOOLS)
    assert result.ok, result.error
    assert result.value == json.loads(expected)
