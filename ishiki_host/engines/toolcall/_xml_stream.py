"""The incremental reader of Hermes-style ``<tool_call>`` answers.

``ToolCallStreamParser`` takes an answer in chunks split anywhere (inside a tag, an escape, a multi-byte
character's neighbourhood) and reports events as soon as they are certain: text outside blocks, the text of
``<think>`` blocks, each completed tool call, and notes. Every decision depends only on the text, never on
where the chunks were cut, so ``finish()`` yields the same ``ParsedAnswer`` as parsing the whole answer at once
(the one-shot ``parse_answer`` is this parser fed one chunk).

Reading rules:

- tags are case-insensitive and may hold whitespace (``< tool_call >``, ``</ tool_call>``);
- a block's body is found string-aware: a ``</tool_call>`` inside a JSON string does not close it; stray
  ``}``/``]`` between the JSON and the closing tag are ignored; a missing closing tag is tolerated, anywhere;
- the body is ``{"name": ..., "arguments": {...}}`` (``arguments`` may be a JSON string; ``parameters`` is
  accepted, and so is the OpenAI shape ``{"function": {"name": ..., "arguments": ...}}``), or a list of those;
- a body that is not valid JSON is repaired when safe; if it still cannot be read, the call is not run: when its
  name can be seen it becomes a call with a ``parse_error`` (the agent answers it with an error), else a note;
- ``<think>...</think>`` is reasoning: kept as ``thoughts``, never searched for tool calls; stray closing tags
  are dropped from the text;
- the answer's ``text`` is the text outside blocks, stripped, with code fences that only held blocks removed
  and the blank lines left where blocks were squeezed to one (the streamed ``TextEvent``s are the raw pieces).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ishiki_host.core.messages import ToolCall
from ishiki_host.engines.toolcall._answer import CallBuilder, ParsedAnswer
from ishiki_host.engines.toolcall._jsonscan import JsonRepairError, JsonScanner, loads_lenient

__all__ = ["NoteEvent", "TextEvent", "ThinkingEvent", "ToolCallEvent", "ToolCallStreamParser", "XmlEvent"]


@dataclass(frozen=True, slots=True)
class TextEvent:
    """Text outside any block (prose meant as the answer's text)."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingEvent:
    """Text inside a ``<think>`` block."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A tool call whose block is complete."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class NoteEvent:
    """Something the model should be told (a dropped call, a block that could not be read)."""

    note: str


XmlEvent = TextEvent | ThinkingEvent | ToolCallEvent | NoteEvent

_TAG = re.compile(r"<\s*(/?)\s*(tool_call|think)\s*>", re.I)
_TAG_START = re.compile(r"<\s*/?\s*([A-Za-z_]*)(\s*)")
_CLOSE_CALL = re.compile(r"<\s*/\s*tool_call\s*>", re.I)
_AFTER_JSON = re.compile(r"[\s}\]]*")
_NAME_GUESS = re.compile(r"""["']name["']\s*:\s*["']([^"'\\]+)["']""")
_BLANK_LINES = re.compile(r"(\r?\n)(?:[ \t]*\r?\n){2,}")
_EMPTY_FENCE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*\r?\n\s*^[ \t]*```[ \t]*\r?$", re.M)
_WORDS = ("tool_call", "think")
_PARTIAL = "partial"
_OUT, _CALL, _THINK = "out", "call", "think"


def _tidy(text: str) -> str:
    """The answer's text once blocks are out: fences left empty removed, blank runs squeezed, stripped."""
    return _BLANK_LINES.sub(r"\1\1", _EMPTY_FENCE.sub("", text)).strip()


def _tag_at(buf: str, final: bool) -> tuple[str, int] | str | None:
    """The tag at the start of ``buf`` as ``(kind, length)``, ``_PARTIAL`` if more text could make one."""
    match = _TAG.match(buf)
    if match is not None:
        return ("/" if match.group(1) else "") + match.group(2).lower(), match.end()
    start = _TAG_START.match(buf)
    if final or start is None or start.end() < len(buf):
        return None
    word = start.group(1).lower()
    could = word in _WORDS if start.group(2) else any(w.startswith(word) for w in _WORDS)
    return _PARTIAL if could else None


class ToolCallStreamParser:
    """Reads an answer chunk by chunk: ``feed`` as text arrives, ``finish`` at the end, then ``answer``.

    ``tools`` is the set of function names on offer (``None``: any); call ids are
    ``f"{id_prefix}_{step}_{index}"``.
    """

    def __init__(self, tools: Collection[str] | None = None, *, step: int = 0, id_prefix: str = "call"):
        self._builder = CallBuilder(tools, step=step, id_prefix=id_prefix)
        self._buf = ""
        self._state = _OUT
        self._mode = ""
        self._body = ""
        self._scanner = JsonScanner()
        self._events: list[XmlEvent] = []
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._failed = 0
        self._finished = False

    def feed(self, chunk: str) -> list[XmlEvent]:
        """Take the next piece of the answer; the events it made certain."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        self._buf += chunk
        self._run(final=False)
        return self._take()

    def finish(self) -> list[XmlEvent]:
        """The answer is complete: flush what was held back (an unclosed block is read as it stands)."""
        if not self._finished:
            self._run(final=True)
            self._finished = True
        return self._take()

    def answer(self) -> ParsedAnswer:
        """The whole answer as read (call after ``finish``)."""
        if not self._finished:
            raise RuntimeError("answer() before finish()")
        thoughts = "".join(self._thinking).strip()
        return ParsedAnswer(
            text=_tidy("".join(self._text)),
            tool_calls=tuple(self._builder.calls),
            notes=tuple(self._builder.notes),
            ok=self._failed == 0,
            thoughts=thoughts or None,
            dropped=self._builder.dropped,
        )

    def _take(self) -> list[XmlEvent]:
        merged: list[XmlEvent] = []
        for event in self._events:
            last = merged[-1] if merged else None
            if isinstance(event, TextEvent) and isinstance(last, TextEvent):
                merged[-1] = TextEvent(last.text + event.text)
            elif isinstance(event, ThinkingEvent) and isinstance(last, ThinkingEvent):
                merged[-1] = ThinkingEvent(last.text + event.text)
            else:
                merged.append(event)
        self._events.clear()
        return merged

    def _emit_text(self, text: str) -> None:
        if text:
            self._text.append(text)
            self._events.append(TextEvent(text))

    def _emit_thinking(self, text: str) -> None:
        if text:
            self._thinking.append(text)
            self._events.append(ThinkingEvent(text))

    def _run(self, *, final: bool) -> None:
        handlers = {_OUT: self._outside, _CALL: self._in_call, _THINK: self._in_think}
        while handlers[self._state](final):
            pass

    def _outside(self, final: bool) -> bool:
        """Text until a tag; returns whether it made progress and should run again."""
        buf = self._buf
        index = buf.find("<")
        if index < 0:
            self._emit_text(buf)
            self._buf = ""
            return False
        self._emit_text(buf[:index])
        buf = self._buf = buf[index:]
        tag = _tag_at(buf, final)
        if tag == _PARTIAL:
            return False
        if not isinstance(tag, tuple):
            self._emit_text("<")
            self._buf = buf[1:]
            return True
        kind, length = tag
        self._buf = buf[length:]
        if kind == "tool_call":
            self._state, self._mode, self._body = _CALL, "lead", ""
        elif kind == "think":
            self._state = _THINK
        return True

    def _in_think(self, final: bool) -> bool:
        buf = self._buf
        index = buf.find("<")
        if index < 0:
            self._emit_thinking(buf)
            self._buf = ""
            return False
        self._emit_thinking(buf[:index])
        buf = self._buf = buf[index:]
        tag = _tag_at(buf, final)
        if tag == _PARTIAL:
            return False
        length = tag[1] if isinstance(tag, tuple) else 1
        if isinstance(tag, tuple) and tag[0] == "/think":
            self._state = _OUT
        else:
            self._emit_thinking(buf[:length])
        self._buf = buf[length:]
        return True

    def _in_call(self, final: bool) -> bool:
        if self._mode == "lead" and not self._lead(final):
            return self._state != _CALL
        if self._mode == "json":
            return self._json_body(final)
        if self._mode == "after":
            return self._after_json(final)
        return self._raw_body(final)

    def _lead(self, final: bool) -> bool:
        """Skip whitespace before the body and pick how to read it; False while nothing is known yet."""
        stripped = self._buf.lstrip()
        self._buf = stripped
        if not stripped:
            if final:
                self._complete("")
            return False
        if stripped[0] in "{[":
            self._mode, self._scanner = "json", JsonScanner()
        else:
            self._mode = "raw"
        return True

    def _json_body(self, final: bool) -> bool:
        self._body += self._buf
        self._buf = ""
        end = self._scanner.scan(self._body)
        if end is None:
            if final:
                self._cut_at_close_tag()
            return final
        self._buf, self._body = self._body[end:], self._body[:end]
        self._mode = "after"
        return True

    def _after_json(self, final: bool) -> bool:
        skip = _AFTER_JSON.match(self._buf)
        start = skip.end() if skip else 0
        if start == len(self._buf) and not final:
            return False
        tag = _tag_at(self._buf[start:], final)
        if tag == _PARTIAL:
            return False
        if isinstance(tag, tuple) and tag[0] == "/tool_call":
            self._buf = self._buf[start + tag[1] :]
        self._complete(self._body)
        return True

    def _raw_body(self, final: bool) -> bool:
        self._body += self._buf
        self._buf = ""
        if _CLOSE_CALL.search(self._body) or final:
            self._cut_at_close_tag()
            return True
        return False

    def _cut_at_close_tag(self) -> None:
        """End the block at the first closing tag in the body (or at its end); what follows is read again."""
        close = _CLOSE_CALL.search(self._body)
        if close is None:
            self._complete(self._body)
            return
        self._buf = self._body[close.end() :] + self._buf
        self._complete(self._body[: close.start()])

    def _complete(self, body: str) -> None:
        self._state, self._mode, self._body = _OUT, "", ""
        before = len(self._builder.notes)
        self._read_body(body.strip())
        self._events.extend(NoteEvent(note) for note in self._builder.notes[before:])

    def _read_body(self, body: str) -> None:
        if not body:
            self._fail("An empty <tool_call> block was ignored.")
            return
        try:
            value, _ = loads_lenient(body)
        except JsonRepairError as exc:
            self._unreadable(body, str(exc))
            return
        for item in value if isinstance(value, list) else [value]:
            self._read_call(item)

    def _read_call(self, item: Any) -> None:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            item = item["function"]
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name.strip():
            self._fail('A <tool_call> block had no "name"; it was not run.')
            return
        arguments = next((item[k] for k in ("arguments", "parameters", "params") if k in item), None)
        call = self._builder.add(name.strip(), arguments)
        if call is not None:
            self._events.append(ToolCallEvent(call))

    def _unreadable(self, body: str, reason: str) -> None:
        self._failed += 1
        guess = _NAME_GUESS.search(body)
        if guess is None:
            self._builder.drop(f"A <tool_call> block could not be read ({reason}); it was not run.")
            return
        call = self._builder.add_unreadable(guess.group(1), body, f"the call could not be read: {reason}")
        if call is not None:
            self._events.append(ToolCallEvent(call))

    def _fail(self, note: str) -> None:
        self._failed += 1
        self._builder.drop(note)
