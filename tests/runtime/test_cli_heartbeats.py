"""Heartbeats as a user meets them in ``ishiki run``: heartbeats.json seeded and its mistakes logged, a beat set
from the console kept in memory.db, and a broken file that changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.store import MemoryStore
from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, ScriptedCall, profile_yaml, write_config
from ishiki_host.testing.host import models_yaml

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

TARGET = {"profile": "ana", "sid": "console:local", "channel": "private:local"}


async def stored(root: Path) -> dict[str, tuple[bool, str | None]]:
    async with await MemoryStore.open(root / "data" / "memory.db") as store:
        return {b.id: (b.managed, b.created_by) for b in await store.heartbeats.find()}


def test_beats_from_the_file_and_from_the_console_are_kept_and_bad_entries_logged(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        last = request.json["messages"][-1]
        if last["role"] == "tool":
            return Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["Reminder set."]}),))
        arguments = {"text": "drink water", "cron": "0 */2 * * *", "type": "reminder"}
        return Reply(tool_calls=(ScriptedCall("set_beat", arguments),))

    fake_openai.default = answer
    good = {"id": "standup", "text": "ask for the standup", "cron": "0 10 * * 1-5", "type": "task", "target": TARGET}
    bad = {**good, "id": "typo", "cron": "0 25 * * *"}
    files = {"heartbeats.json": json.dumps([good, bad])}
    root = write_config(
        tmp_path / "bot", profiles={"ana": profile_yaml("console:local: ['*']")}, models=models_yaml(fake_openai),
        files=files,
    )  # fmt: skip
    code, out, err = start_ishiki("run", str(root)).finish(input="remind me to drink water every two hours\n")
    assert (code, out) == (0, "Reminder set.\n"), err
    assert "Traceback" not in err
    assert f"{root / 'heartbeats.json'}: [1]: beat 'typo': cron '0 25 * * *': bad hour field '25'" in err
    beats = anyio.run(stored, root)
    assert beats.pop("standup") == (True, None)
    assert beats.pop("__clear_images__") == (True, None)  # seeded from attachments.retention
    [(made, by)] = beats.items()
    assert made.startswith("b-")
    assert by == (False, "ana/console:local/private:local")

    (root / "heartbeats.json").write_text("[{\n", encoding="utf-8")
    code, out, err = start_ishiki("run", str(root)).finish(input="")
    assert (code, out) == (0, ""), err
    assert "not valid JSON" in err
    assert "the managed beats are kept as they were" in err
    assert sorted(anyio.run(stored, root)) == sorted(["__clear_images__", "standup", made])
