"""The skills extension on a real Host: skills follow their files without a restart, and trust."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.memory.skills import SKILLS_HEADER
from ishiki_host.testing import Reply, ScriptedCall

if TYPE_CHECKING:
    from pathlib import Path

    from ishiki_host.core.clock import FakeClock
    from ishiki_host.runtime.runtime import AgentRuntime

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any

OWNERS = "trust: {owners: ['fake:42']}\n"


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


def skill(name: str, description: str, body: str = "Do it well.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def write_skill(root: Path, name: str, text: str) -> None:
    folder = root / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")


def prompt(router: Router) -> str:
    return str(router.requests()[-1]["messages"][0]["content"])


async def test_skills_are_added_edited_and_removed_without_a_restart(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_clock: FakeClock
) -> None:
    files = {"skills/brew-tea/SKILL.md": skill("brew-tea", "Brew tea well.")}
    async with memory_host(summarizer="off", files=files, reload_interval=2, clock=fake_clock) as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("one")))
        assert f"{SKILLS_HEADER}\n- brew-tea: Brew tea well." in prompt(router)

        write_skill(th.root, "haiku", skill("haiku", "Write haiku."))
        write_skill(th.root, "brew-tea", skill("brew-tea", "Brew green and black tea."))
        store = th.host.services.memory
        with anyio.fail_after(10):
            while len(await store.skills.all()) < 2:  # the host's reload tick syncs the folder
                await fake_clock.advance(2)
                await anyio.wait_all_tasks_blocked()
        await settle(runtime_of(await channel.say("two")))
        assert "- brew-tea: Brew green and black tea.\n- haiku: Write haiku." in prompt(router)

        (th.root / "skills" / "haiku" / "SKILL.md").unlink()
        (th.root / "skills" / "haiku").rmdir()
        await th.host.reload()
        await settle(runtime_of(await channel.say("three")))
        assert "haiku" not in prompt(router)
        assert "- brew-tea: Brew green and black tea." in prompt(router)


async def test_the_model_reads_a_skill_and_untrusted_turns_get_no_skills(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    files = {"skills/brew-tea/SKILL.md": skill("brew-tea", "Brew tea well.", "Water at 80 degrees.\n")}
    async with memory_host(summarizer="off", files=files, extra=OWNERS) as th:
        channel = th.channel()
        read = Reply(tool_calls=(ScriptedCall("read", {"url": "skill://brew-tea"}),))
        router.turns.extend([read, Reply(tool_calls=(ScriptedCall("finish", {}),))])
        await settle(runtime_of(await channel.say("make tea", user_id="42")))
        owner_result = json.dumps(router.requests()[-1]["messages"][-1])
        assert "Water at 80 degrees." in owner_result

        router.turns.extend([read, Reply(tool_calls=(ScriptedCall("finish", {}),))])
        await settle(runtime_of(await channel.say("make tea for me too", user_id="3")))
        untrusted = router.requests()
        assert SKILLS_HEADER not in untrusted[-2]["messages"][0]["content"]
        refused = json.dumps(untrusted[-1]["messages"][-1])
        assert "forbidden: skill:// needs trust trusted; this conversation is untrusted" in refused
        assert "Water at 80 degrees." not in refused


def deep_skill(name: str) -> str:
    """A front matter nested 600 deep (1.2 KB): it used to exhaust the YAML parser's recursion."""
    return skill(name, "Deep.").replace("---\n", f"---\nextra: {'[' * 600}{']' * 600}\n", 1)


async def test_a_hostile_skill_is_skipped_at_start_and_on_a_reload_tick(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    files = {
        "skills/brew-tea/SKILL.md": skill("brew-tea", "Brew tea well."),
        "skills/deep/SKILL.md": deep_skill("deep"),
    }
    async with memory_host(summarizer="off", files=files, reload_interval=2, clock=fake_clock) as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("one")))
        assert f"{SKILLS_HEADER}\n- brew-tea: Brew tea well." in prompt(router)
        assert "skills/deep/SKILL.md:2: nested deeper than 64 levels; skipped" in caplog.text

        write_skill(th.root, "deeper", deep_skill("deeper"))
        write_skill(th.root, "haiku", skill("haiku", "Write haiku."))
        store = th.host.services.memory
        with anyio.fail_after(10):
            while len(await store.skills.all()) < 2:  # the reload tick reads both; only the good one loads
                await fake_clock.advance(2)
                await anyio.wait_all_tasks_blocked()
        assert "skills/deeper/SKILL.md:2: nested deeper than 64 levels; skipped" in caplog.text
        await settle(runtime_of(await channel.say("two")))
        assert "- brew-tea: Brew tea well.\n- haiku: Write haiku." in prompt(router)
