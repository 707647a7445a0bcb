"""Parse time of the text tool-call protocols per 10 KB answer, against ``json.loads`` of a 10 KB document.

Run: ``.venv/bin/python bench/textproto_parse.py [--quick] [--runs N] [--json PATH]``. A run is ``number``
calls (20 quick, 200 full), its value the mean time per call scaled to exactly 10 KB of input; the ratios
(protocol time / baseline time) are what to compare across machines.
"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable

from _report import Bench, run

from ishiki_host.engines.toolcall import json_protocol, xml_protocol

TARGET = 10 * 1024
TOOLS = ["send_message", "read", "search_memory", "finish"]
LINE = "Line {i}: the quick brown fox 🦊 jumps over {{braces}} and `ticks` — 中文也可以。\n"


def _message(size: int) -> str:
    text, i = "", 0
    while len(text.encode()) < size:
        text += LINE.format(i=i)
        i += 1
    return text


def json_answer() -> str:
    """A realistic 10 KB JSON-protocol answer: prose, thoughts, three actions, one long message."""
    prose = "Sure, let me handle that. First I check my notes, then I write the summary.\n"
    actions = [
        {"function": "search_memory", "params": {"query": "project deadlines"}},
        {"function": "read", "params": {"url": "asset://doc/7.md"}},
        {"function": "send_message", "params": {"text": ""}},
    ]
    block = {"thoughts": {"plan": "search, read, answer", "mood": "helpful"}, "actions": actions}
    overhead = len(f"{prose}```json\n{json.dumps(block, ensure_ascii=False)}\n```\n".encode())
    actions[2]["params"]["text"] = "Here is the summary:\n```md\n" + _message(TARGET - overhead - 40) + "```"
    return f"{prose}```json\n{json.dumps(block, ensure_ascii=False, indent=1)}\n```\nDone."


def xml_answer() -> str:
    """A realistic 10 KB Hermes answer: prose between eight calls."""
    parts = ["I'll send the report in parts.\n"]
    per_call = TARGET // 8 - 120
    for n in range(8):
        body = {"name": "send_message", "arguments": {"text": f"Part {n}:\n" + _message(per_call)}}
        parts.append(f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>\nPart {n} sent.\n")
    return "".join(parts)


def baseline_document() -> str:
    """A 10 KB JSON document for ``json.loads``."""
    rows, i = [], 0
    while len(json.dumps(rows, ensure_ascii=False).encode()) < TARGET:
        rows.append({"id": i, "name": f"item {i}", "tags": ["a", "b"], "score": i * 0.5, "text": LINE.format(i=i)})
        i += 1
    return json.dumps(rows, ensure_ascii=False)


def streamed(answer: str, size: int) -> Callable[[], object]:
    """Parse ``answer`` fed in ``size``-character chunks."""
    chunks = [answer[i : i + size] for i in range(0, len(answer), size)]

    def run() -> object:
        parser = xml_protocol.ToolCallStreamParser(TOOLS)
        for chunk in chunks:
            parser.feed(chunk)
        parser.finish()
        return parser.answer()

    return run


def per_call(func: Callable[[], object], runs: int, number: int) -> list[float]:
    """Seconds per call in each run of ``number`` calls (``timeit``: garbage collection off while timing)."""
    return [seconds / number for seconds in timeit.repeat(func, repeat=runs, number=number)]


def measure(bench: Bench) -> None:
    """Check the answers parse as expected, then time each protocol against json.loads."""
    runs = bench.runs(quick=3, full=9)
    number = 20 if bench.quick else 200
    document, ja, xa = baseline_document(), json_answer(), xml_answer()
    broken = ja.rsplit("}", 3)[0].replace('"helpful"}', '"helpful",}')
    assert len(json_protocol.parse_answer(ja, TOOLS).tool_calls) == 3
    assert json_protocol.parse_answer(broken, TOOLS).notes, "the broken answer should need repairs"
    assert len(xml_protocol.parse_answer(xa, TOOLS).tool_calls) == 8
    # Every time is scaled to exactly 10 KB of input, so sizes a little off the target do not skew ratios.
    scale = TARGET / len(document.encode())
    base = [t * scale for t in per_call(lambda: json.loads(document), runs, number)]
    cases: list[tuple[str, int, Callable[[], object]]] = [
        ("json protocol, clean block", len(ja.encode()), lambda: json_protocol.parse_answer(ja, TOOLS)),
        ("json protocol, repaired block", len(broken.encode()), lambda: json_protocol.parse_answer(broken, TOOLS)),
        ("xml protocol, one shot", len(xa.encode()), lambda: xml_protocol.parse_answer(xa, TOOLS)),
        ("xml protocol, 16-char chunks", len(xa.encode()), streamed(xa, 16)),
    ]
    bench.note("time per 10 KB of input")
    for name, size, func in cases:
        took = [t * TARGET / size for t in per_call(func, runs, number)]
        bench.add(name, "s", took, baseline="json.loads, 10 KB JSON document", baseline_samples=base)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
