"""Window selection of the standard context engine: whole exchanges, newest first, inside the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.core.entries import Entry
from ishiki_host.core.factlog import FactLog
from ishiki_host.engines.context._window import Window, WindowParams, select_window


class Log:
    """Builds a list of entries the way the agent writes them; every message costs ``tokens`` (default 10)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.turns = 0

    def add(self, type: str, data: dict[str, Any], turn: int | None = None) -> int:
        entry = Entry(len(self.entries) + 1, type, 1.0, data, turn)
        self.entries.append(entry)
        return entry.id

    def user(self, text: str = "hi", tokens: int = 10) -> int:
        return self.add("message", {"role": "user", "parts": [{"type": "text", "text": text}], "tokens": tokens})

    def turn(self, *trigger_ids: int, tools: int = 1, tokens: int = 10, end: str | None = "turn.done") -> int:
        """A turn: start, an assistant message with ``tools`` calls and their results, a final answer, its end."""
        self.turns += 1
        number = self.turns
        triggers = [{"by": "continue", "entry": i} for i in trigger_ids]
        self.add("event", {"name": "turn.start", "triggers": triggers}, number)
        calls = [{"id": f"c{number}-{i}", "name": "t", "arguments": {}} for i in range(tools)]
        self.add("message", {"role": "assistant", "parts": [], "tool_calls": calls, "tokens": tokens}, number)
        for call in calls:
            self.add("message", {"role": "tool", "tool_call_id": call["id"], "parts": [], "tokens": tokens}, number)
        self.add("message", {"role": "assistant", "parts": [{"type": "text", "text": "ok"}], "tokens": tokens}, number)
        if end:
            self.add("event", {"name": end}, number)
        return number

    def select(self, budget: int, *, refill: float = 0.5, turn: int | None = None) -> Window:
        params = WindowParams(budget, refill, cost, turn)
        return select_window(reversed(self.entries), params)


def cost(entry: Entry) -> int:
    if entry.type in ("compact", "session"):
        return 5 if entry.data.get("summary") else 0
    return int(entry.data.get("tokens", 0)) if entry.type == "message" else 0


def ids(window: Window) -> list[int]:
    return [e.id for e in window.entries]


def test_everything_fits_in_a_large_budget() -> None:
    log = Log()
    log.turn(log.user())
    log.turn(log.user())
    window = log.select(1000)
    assert ids(window) == list(range(1, len(log.entries) + 1))
    assert window.cut is None
    assert window.tokens == 80


def test_newest_turns_first_and_each_whole_with_the_message_that_led_to_it() -> None:
    log = Log()
    for _ in range(3):
        log.turn(log.user())  # user, start, assistant, tool, answer, done: 6 entries, 40 tokens
    window = log.select(85)
    assert ids(window) == list(range(7, 19))  # the two newest exchanges, never a part of the oldest
    assert window.tokens == 80
    assert window.cut == 12  # refill: 0.5 * 85 = 42 tokens keep one exchange; compact up to entry 12


def test_group_messages_no_turn_answered_are_dropped_one_by_one() -> None:
    log = Log()
    chatter = [log.user(f"chat {i}") for i in range(5)]
    log.turn(log.user("@bot hi"))
    window = log.select(65)
    assert ids(window)[0] == chatter[-2]  # 40 for the exchange, then two chatter messages of 10 each
    assert window.tokens == 60


def test_the_messages_a_turn_names_as_triggers_stay_with_it() -> None:
    log = Log()
    asked = log.user("question")
    log.user("chatter in between")
    log.user("more chatter")
    log.turn(asked)
    window = log.select(45)  # 3 turn messages + 3 user messages = 60 > 45, but they are one unit
    assert ids(window) == list(range(1, 9))
    assert window.cut is None  # nothing older to compact


def test_a_trigger_inside_an_earlier_turn_merges_the_two() -> None:
    log = Log()
    first = log.user("first")
    log.add("event", {"name": "turn.start", "triggers": [{"entry": first}]}, 1)
    log.add("message", {"role": "assistant", "parts": [], "tokens": 10}, 1)
    joined = log.user("second (joined turn 1, never seen)")
    log.add("event", {"name": "turn.done"}, 1)
    log.turns = 1
    log.turn(joined)
    window = log.select(30)  # far over budget: the merged unit is kept whole as the newest
    assert ids(window) == list(range(1, len(log.entries) + 1))


def test_the_running_turn_is_always_kept_and_joined_messages_with_it() -> None:
    log = Log()
    log.turn(log.user())
    asked = log.user("now")
    log.turn(asked, tools=3, end=None)  # running: no end yet
    log.user("joined while it runs")
    window = log.select(20, turn=2)
    assert ids(window)[0] == asked
    assert ids(window)[-1] == len(log.entries)
    assert window.cut == asked - 1


def test_a_session_entry_ends_the_window_and_heads_it() -> None:
    log = Log()
    log.turn(log.user())
    session = log.add("session", {"reason": "compact", "summary": "we met"})
    log.turn(log.user())
    window = log.select(1000)
    assert ids(window) == list(range(session, len(log.entries) + 1))
    assert window.head is not None
    assert window.head.id == session
    assert window.tokens == 45


def test_the_newest_compact_heads_the_window_wherever_it_was_appended() -> None:
    log = Log()
    log.turn(log.user())
    log.turn(log.user())
    log.add("compact", {"upto": 3, "summary": "superseded"})
    log.turn(log.user())  # entries 14..19
    compact = log.add("compact", {"upto": 6, "summary": "the first exchange"})
    log.turn(log.user())
    window = log.select(1000)
    assert ids(window)[0] == compact
    assert ids(window)[1:] == [i for i in range(7, len(log.entries) + 1) if i not in (13, compact)]
    assert window.upto == 6
    assert window.cut is None


def test_the_summary_counts_against_the_budget() -> None:
    log = Log()
    log.turn(log.user())
    log.add("compact", {"upto": 0, "summary": "s"})
    log.turn(log.user())
    assert log.select(80).cut == 7  # 5 + 80 > 80: over budget; compact the first exchange (and old summary)
    assert log.select(84).tokens == 45
    assert log.select(85).tokens == 85


def test_no_cut_when_only_the_newest_exchange_is_left() -> None:
    log = Log()
    log.turn(log.user(tokens=500))
    window = log.select(100)
    assert ids(window) == list(range(1, 7))
    assert window.cut is None


@given(
    shape=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans()), min_size=1, max_size=12),
    budget=st.integers(0, 400),
    refill=st.floats(0, 1),
    running=st.booleans(),
)
def test_windows_are_suffixes_of_whole_exchanges(
    shape: list[tuple[int, int, bool]], budget: int, refill: float, running: bool
) -> None:
    log = Log()
    for chatter, tools, triggered in shape:
        leading = [log.user() for _ in range(chatter)]
        asked = log.user()
        log.turn(*([leading[0]] if triggered and leading else [asked]), tools=tools)
    if running:
        log.turn(log.user(), end=None)
    window = log.select(budget, refill=refill, turn=log.turns if running else None)
    kept = ids(window)
    assert kept == list(range(kept[0], len(log.entries) + 1))  # a suffix of the log
    for number in {e.turn for e in window.entries if e.turn is not None}:
        of_turn = [e.id for e in log.entries if e.turn == number]
        assert set(of_turn) <= set(kept)  # never a part of a turn
        start = next(e for e in log.entries if e.turn == number and e.name == "turn.start")
        assert all(t["entry"] in kept for t in start.data["triggers"])  # nor without its triggers
        assert start.id - 1 in kept or start.id == 1  # nor without the message that led to it
    if running:
        assert {e.id for e in log.entries if e.turn == log.turns} <= set(kept)
    if window.cut is not None:  # the refill point is a border between whole exchanges too
        for number in range(1, log.turns + 1):
            start = next(e for e in log.entries if e.turn == number and e.name == "turn.start")
            sides = {e.id <= window.cut for e in log.entries if e.turn == number}
            sides |= {t["entry"] <= window.cut for t in start.data["triggers"]}
            assert len(sides) == 1


@pytest.mark.anyio
async def test_reading_a_window_costs_the_window_not_the_log(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    line = '{"id":%d,"type":"message","ts":1.0,"data":{"role":"user","parts":[{"type":"text","text":"%s"}]}}\n'
    with path.open("w", encoding="utf-8") as out:
        out.writelines(line % (i, "a message of forty characters, or so....") for i in range(1, 100_001))
    async with await FactLog.open(path, cache_size=0) as log:
        before = log.stats.lines_parsed

        def text_cost(entry: Entry) -> int:
            return 14  # about what a forty-character message estimates to

        window = await log.read_back(lambda entries: select_window(entries, WindowParams(1400, 0.5, text_cost)))
        read = log.stats.lines_parsed - before
    assert len(window.entries) == 100
    assert window.cut == 100_000 - 50
    # the window's 100 entries, the two that show it is full, then at most a budget's worth (101) looking for a
    # summary to head it; the log's size plays no part
    assert window.read == 203
    assert read <= 203 + 1


def test_a_running_turn_whose_start_is_missing_does_not_swallow_the_log() -> None:
    log = Log()
    for _ in range(50):
        log.turn(log.user())
    window = log.select(85, turn=99)
    assert window.tokens == 80
    assert window.read < 40  # of 300 entries
