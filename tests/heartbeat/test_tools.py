"""The beat tools: defaults, refusals with reasons, what a runtime sees, managed beats untouchable."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ishiki_host.core.clock import FakeClock
from ishiki_host.core.tools import Tool
from ishiki_host.errors import ToolError
from ishiki_host.heartbeat import make_beat_tools, render_beats, sync_from_file, visible_beats
from ishiki_host.heartbeat.tools import BEAT_TOOL_NAMES
from ishiki_host.store import BeatTarget, MemoryStore

pytestmark = pytest.mark.anyio

Wall = Callable[[str, str], float]
HERE = BeatTarget("alice", "telegram:1", "private:9")
ELSEWHERE = BeatTarget("alice", "telegram:1", "group:42")


class Pokes:
    """Counts scheduler pokes."""

    def __init__(self) -> None:
        self.count = 0

    def poke(self) -> None:
        self.count += 1


def _claims(target: BeatTarget) -> str | None:
    return None if target.profile == "alice" else f"no profile {target.profile!r} claims {target.sid} {target.channel}"


@pytest.fixture
def pokes() -> Pokes:
    return Pokes()


@pytest.fixture
async def tools(store: MemoryStore, pokes: Pokes, fake_clock: FakeClock, wall: Wall) -> dict[str, Tool]:
    await fake_clock.advance(wall("2024-06-01 08:00", "Europe/Berlin") - fake_clock.now())
    made = make_beat_tools(
        store, pokes, default_tz="Europe/Berlin", target_validator=_claims, runtime_target=HERE, rng=random.Random(7)
    )
    return {tool.name: tool for tool in made}


async def _call(tools: dict[str, Tool], name: str, ctx: Any, **args: Any) -> Any:
    return await tools[name].handler(args, ctx)


async def test_the_four_tools_are_trusted_with_valid_schemas(tools: dict[str, Tool]) -> None:
    assert tuple(tools) == BEAT_TOOL_NAMES
    for tool in tools.values():
        assert tool.trust == "trusted"
        jsonschema.Draft202012Validator.check_schema(dict(tool.parameters))
    assert "Default: Europe/Berlin" in json.dumps(tools["set_beat"].parameters)


async def test_set_beat_defaults_to_this_chat(
    tools: dict[str, Tool], ctx: Any, store: MemoryStore, pokes: Pokes, wall: Wall
) -> None:
    result = await _call(tools, "set_beat", ctx, text="stretch, your back hurts", cron="0 9 * * 1-5", type="reminder")
    beat = await store.heartbeats.get(result.data["id"])
    assert beat is not None
    assert (beat.target, beat.created_by, beat.managed, beat.timezone) == (
        HERE, "alice/telegram:1/private:9", False, None
    )  # fmt: skip
    assert beat.next_run == wall("2024-06-03 09:00", "Europe/Berlin")  # 1 June 2024 is a Saturday
    assert pokes.count == 1
    assert result.content.startswith(f"Set {beat.id}: reminder, cron '0 9 * * 1-5' (Europe/Berlin), next Mon")
    assert "to alice in telegram:1 private:9" in result.content


async def test_set_beat_background_and_partial_targets(tools: dict[str, Tool], ctx: Any, store: MemoryStore) -> None:
    quiet = await _call(tools, "set_beat", ctx, text="digest", cron="0 7 * * *", type="task", background=True)
    there = await _call(tools, "set_beat", ctx, text="standup", cron="0 10 * * 1", type="task",
                        target={"channel": "group:42"}, timezone="Asia/Tokyo")  # fmt: skip
    assert quiet.data["target"] is None
    assert there.data["target"] == {"profile": "alice", "sid": "telegram:1", "channel": "group:42"}
    assert there.data["timezone"] == "Asia/Tokyo"
    with pytest.raises(ToolError, match="either a target or background"):
        await _call(tools, "set_beat", ctx, text="x", cron="0 7 * * *", type="task", background=True,
                    target={"channel": "group:42"})  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"cron": "* * * * *"}, "runs every minute"),
        ({"cron": "*/1 8-18 * * *"}, "runs every minute"),
        ({"cron": "0 9 * * *", "recurring": False}, "one-time cron '0 9 \\* \\* \\*' would fire more than once"),
        ({"cron": "0 9 29 2 *", "recurring": False}, "does not fire within a year"),
        ({"cron": "0 9 * * mo"}, "bad day-of-week field 'mo'"),
        ({"cron": "0 9 * * *", "timezone": "Europe/Berln"}, "unknown time zone 'Europe/Berln'"),
        (
            {"cron": "0 9 * * *", "target": {"profile": "bob"}},
            "cannot speak at bob in telegram:1 private:9: no profile",
        ),
        ({"cron": "0 9 * * *", "type": "alarm"}, "type: 'alarm' is not one of"),
        ({"cron": 9}, "cron: 9 is not of type 'string'"),
        ({"cron": "0 9 * * *", "when": "now"}, "Additional properties are not allowed"),
    ],
)
async def test_set_beat_refusals_say_why(
    tools: dict[str, Tool], ctx: Any, store: MemoryStore, args: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        await _call(tools, "set_beat", ctx, **{"text": "x", "type": "reminder", **args})
    assert await store.heartbeats.find() == []


async def test_set_beat_requires_its_fields(tools: dict[str, Tool], ctx: Any) -> None:
    with pytest.raises(ToolError, match="set_beat: 'cron' is a required property"):
        await _call(tools, "set_beat", ctx, text="x", type="task")


async def test_a_runtime_sees_its_own_beats_and_those_in_its_chat(
    tools: dict[str, Tool], ctx: Any, store: MemoryStore, fake_clock: FakeClock, tmp_path: Path
) -> None:
    mine = await _call(tools, "set_beat", ctx, text="mine", cron="0 9 * * *", type="task")
    beats_file = tmp_path / "heartbeats.json"
    entries = [
        {"id": "ops", "text": "ops", "cron": "0 8 * * *", "type": "task",
         "target": {"profile": "alice", "sid": "telegram:1", "channel": "private:9"}},
        {"id": "other", "text": "other chat", "cron": "0 8 * * *", "type": "task",
         "target": {"profile": "alice", "sid": "telegram:1", "channel": "group:7"}},
    ]  # fmt: skip
    beats_file.write_text(json.dumps(entries))
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    listed = await _call(tools, "list_beats", ctx)
    assert sorted(b["id"] for b in listed.data) == sorted([mine.data["id"], "ops"])
    assert "ops [from heartbeats.json]" in listed.content
    with pytest.raises(ToolError, match="no beat 'other' here"):
        await _call(tools, "delete_beat", ctx, id="other")


async def test_update_beat(tools: dict[str, Tool], ctx: Any, store: MemoryStore, pokes: Pokes, wall: Wall) -> None:
    made = await _call(tools, "set_beat", ctx, text="water", cron="0 9 * * *", type="reminder")
    beat_id = made.data["id"]
    with pytest.raises(ToolError, match="give at least one field to change"):
        await _call(tools, "update_beat", ctx, id=beat_id)
    text_only = await _call(tools, "update_beat", ctx, id=beat_id, text="water the ferns")
    assert (text_only.data["text"], text_only.data["next_run"]) == ("water the ferns", made.data["next_run"])
    moved = await _call(tools, "update_beat", ctx, id=beat_id, cron="30 18 * * *", timezone="UTC")
    assert moved.data["next_run"] == wall("2024-06-01 18:30", "UTC")
    reset = await _call(tools, "update_beat", ctx, id=beat_id, timezone="")
    assert (reset.data["timezone"], reset.data["next_run"]) == (None, wall("2024-06-01 18:30", "Europe/Berlin"))
    quiet = await _call(tools, "update_beat", ctx, id=beat_id, background=True)
    assert quiet.data["target"] is None
    loud = await _call(tools, "update_beat", ctx, id=beat_id, background=False)
    assert loud.data["target"] == {"profile": "alice", "sid": "telegram:1", "channel": "private:9"}
    with pytest.raises(ToolError, match="runs every minute"):
        await _call(tools, "update_beat", ctx, id=beat_id, cron="* * * * *")
    with pytest.raises(ToolError, match="no beat 'b-nope' here"):
        await _call(tools, "update_beat", ctx, id="b-nope", text="x")
    assert pokes.count == 6


async def test_managed_beats_cannot_be_changed_or_deleted(
    tools: dict[str, Tool], ctx: Any, store: MemoryStore, fake_clock: FakeClock, tmp_path: Path
) -> None:
    beats_file = tmp_path / "heartbeats.json"
    target = {"profile": "alice", "sid": "telegram:1", "channel": "private:9"}
    beats_file.write_text(
        json.dumps([{"id": "ops", "text": "ops", "cron": "0 8 * * *", "type": "task", "target": target}])
    )
    await sync_from_file(beats_file, store, "UTC", fake_clock)
    before = await store.heartbeats.get("ops")
    with pytest.raises(ToolError, match=r"'ops' comes from heartbeats\.json"):
        await _call(tools, "update_beat", ctx, id="ops", text="changed")
    with pytest.raises(ToolError, match=r"'ops' comes from heartbeats\.json"):
        await _call(tools, "delete_beat", ctx, id="ops")
    assert await store.heartbeats.get("ops") == before


async def test_delete_beat(tools: dict[str, Tool], ctx: Any, store: MemoryStore, pokes: Pokes) -> None:
    made = await _call(tools, "set_beat", ctx, text="water", cron="0 9 * * *", type="reminder")
    result = await _call(tools, "delete_beat", ctx, id=made.data["id"])
    assert result.content == f"Deleted beat {made.data['id']}."
    assert await store.heartbeats.find() == []
    assert pokes.count == 2


async def test_a_chat_has_a_beat_limit(store: MemoryStore, pokes: Pokes, ctx: Any) -> None:
    made = make_beat_tools(store, pokes, default_tz="UTC", target_validator=_claims, runtime_target=HERE, max_beats=2)
    set_beat = made[0]
    for hour in (8, 9):
        await set_beat.handler({"text": "x", "cron": f"0 {hour} * * *", "type": "task"}, ctx)
    with pytest.raises(ToolError, match="already has 2 beats"):
        await set_beat.handler({"text": "x", "cron": "0 10 * * *", "type": "task"}, ctx)


async def test_cross_mode_takes_the_current_chat_from_a_callable(store: MemoryStore, pokes: Pokes, ctx: Any) -> None:
    current: list[BeatTarget | None] = [None]
    made = make_beat_tools(store, pokes, default_tz="UTC", target_validator=_claims,
                           runtime_target=lambda: current[0], created_by="alice/main")  # fmt: skip
    set_beat = made[0]
    with pytest.raises(ToolError, match="this chat has no address"):
        await set_beat.handler({"text": "x", "cron": "0 8 * * *", "type": "task"}, ctx)
    current[0] = ELSEWHERE
    result = await set_beat.handler({"text": "x", "cron": "0 8 * * *", "type": "task"}, ctx)
    assert (result.data["target"]["channel"], result.data["created_by"]) == ("group:42", "alice/main")
    assert [b.id for b in await visible_beats(store, target=None, created_by="alice/main")] == [result.data["id"]]
    assert await visible_beats(store, target=None, created_by=None) == []


async def test_render_beats_lists_soonest_first(tools: dict[str, Tool], ctx: Any, store: MemoryStore) -> None:
    assert render_beats([], "UTC").startswith("No beats here.")
    await _call(tools, "set_beat", ctx, text="late " * 40, cron="0 20 * * *", type="task")
    await _call(tools, "set_beat", ctx, text="early", cron="0 9 24 12 *", type="reminder", recurring=False)
    await _call(tools, "set_beat", ctx, text="noon", cron="0 12 * * *", type="reminder")
    lines = render_beats(await store.heartbeats.find(), "Europe/Berlin").splitlines()
    assert lines[0] == "3 beats:"
    assert [line.rsplit(": ", 1)[1][:5] for line in lines[1:]] == ["noon", "late ", "early"]
    assert "one-time reminder, cron '0 9 24 12 *' (Europe/Berlin), next Tue 2024-12-24 09:00 CET" in lines[3]
    assert lines[2].endswith("…")
    assert len(lines[2].rsplit(": ", 1)[1]) == 80


async def test_render_beats_says_a_paused_beat_is_paused(tools: dict[str, Tool], ctx: Any, store: MemoryStore) -> None:
    await _call(tools, "set_beat", ctx, text="noon", cron="0 12 * * *", type="reminder")
    (beat,) = await store.heartbeats.find()
    await store.heartbeats.pause(beat.id)
    (line,) = render_beats(await store.heartbeats.find(), "UTC").splitlines()[1:]
    assert "cron '0 12 * * *' (UTC), paused, to " in line
