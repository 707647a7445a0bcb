"""The commands as a user types them: ``ishiki run`` in a subprocess, the console on pipes, built-in engines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.store.memory_store import MemoryStore
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, write_config
from ishiki_host.testing.host import models_yaml

pytestmark = pytest.mark.slow

Router = Any  # the fixtures of conftest.py
RunConsole = Any

PROFILE = """\
model: default
channels:
  console:local: ['*']
extends:
  workspace: {}
"""
HOST = "scheduler: {interactive_grace_seconds: 0}\n"
HOME = Path("data/runtimes/ana/console%3Alocal/private%3Alocal")


async def stored_memories(path: Path) -> list[tuple[str, str, str]]:
    async with await MemoryStore.open(path) as store:
        return [(m.type, m.content, m.min_trust) for m in await store.memories.latest("ana", trust="owner")]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def send(text: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": [text]}),))


def test_every_command_through_the_console(
    run_console: RunConsole, router: Router, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": PROFILE}, models=models_yaml(fake_openai), host=HOST)
    router.turns.extend([send("Hello, owner."), send("Your files are safe.")])
    router.memories.append(Reply(json.dumps({"type": "fact", "content": "The owner greeted Ana."})))
    router.summaries.append(Reply("The owner said hello and Ana answered."))
    lines = [
        "/whoami",
        "/clear",
        "hello there",
        "/memory",
        "/compact",
        "/memory",
        "/memories",
        "/tools disable write_file",
        "what about my files?",
        "/status",
        "/help",
    ]
    done = run_console(root, lines)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    blocks = [
        "channel: console:local private:local\nid: console:local\ntrust: owner\n",
        "This session is already empty; nothing to clear.\n",
        "Hello, owner.\n",
        "No summary is carried into this session.\n",
        "Summarized the session and started a fresh one seeded with the summary.\n",
        "Summary carried into this session:\nThe owner said hello and Ana answered.\n",
        "The newest ",
        "Turned tool write_file off for ana; it applies from the next turn.\n",
        "Your files are safe.\n",
        "profile: ana (runtime ana/console:local/private:local)\nmodel: default (context window 128,000 tokens)\n",
        "Commands:\n/beats - List the beats of this chat, soonest first.\n"
        "/channels [enable|disable NAME|here] - List this profile's channels, or switch one.\n"
        "/clear - Start a fresh session; nothing is carried over. (also /reset)\n",
        "/whoami - Show your id, your trust level and this channel.\n/help <command> shows one command in full.\n",
    ]
    at = 0
    for block in blocks:
        found = out.find(block, at)
        assert found >= 0, f"{block!r} missing after position {at} of:\n{out}"
        at = found + len(block)
    assert "summary: The owner said hello and Ana answered." in out
    assert "summarizer: auto (each exchange is condensed into long-term memory)" in out
    assert "session: ~" in out
    assert " tokens in 3 messages, seeded with a summary\n" in out
    assert "workspace: root rw; shell off\n" in out  # an extension's status line
    assert sorted(anyio.run(stored_memories, root / "data" / "memory.db")) == [
        ("fact", "The owner greeted Ana.", "owner"),  # written in the background after each reply
        ("fact", "They talked about the weather.", "owner"),
        ("summary", "The owner said hello and Ana answered.", "owner"),
    ]

    first, second = router.requests()
    assert "write_file" in tool_names(first)
    assert "write_file" not in tool_names(second)
    assert "read_file" in tool_names(second)
    assert json.dumps(second).count("The owner said hello and Ana answered.") == 1
    assert "hello there" not in json.dumps(second)
    commands = [line for line in lines if line.startswith("/")]
    log = (root / HOME / "facts.jsonl").read_text(encoding="utf-8")
    assert not any(command in log for command in commands)  # commands never reach the log
