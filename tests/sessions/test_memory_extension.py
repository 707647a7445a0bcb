"""The memory extension on a real Host: memories of exchanges, retrieval by trust, modes, corrupt databases."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import pytest

from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.memory.overflow import OVERFLOW_FAILED_NOTICE, RETRY_NOTICE
from ishiki_host.memory.retrieval import MEMORY_HEADER
from ishiki_host.runtime.command_runner import run_command
from ishiki_host.sessions.threshold import AUTO_COMPACT_NOTICE
from ishiki_host.testing import Reply
from ishiki_host.testing.host import models_yaml
from ishiki_host.testing.sessions import SessionRig

if TYPE_CHECKING:
    from ishiki_host.runtime.runtime import AgentRuntime
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.testing import FakeOpenAIServer

pytestmark = pytest.mark.anyio

MemoryHost = Any  # the fixtures of conftest.py
Router = Any
Settle = Any

OWNERS = "trust: {owners: ['fake:42']}\n"


def runtime_of(delivery: object) -> AgentRuntime:
    assert isinstance(delivery, RuntimeDelivery), delivery
    return delivery.runtime


def store_of(runtime: AgentRuntime) -> MemoryStore:
    store = runtime.context.services.memory
    assert store is not None
    return store


def system_prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


async def test_auto_mode_remembers_each_answered_exchange_and_nothing_of_a_failed_turn(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: FakeOpenAIServer
) -> None:
    router.memories.append(Reply(json.dumps({"type": "fact", "content": "Ana's cat is called Miso."})))
    async with memory_host() as th:
        runtime = runtime_of(await th.channel().say("my cat is called Miso"))
        await settle(runtime)
        store = store_of(runtime)
        memories = await store.memories.latest("ana", trust="owner", count=10)
        assert [(m.type, m.content, m.min_trust) for m in memories] == [
            ("fact", "Ana's cat is called Miso.", "trusted")
        ]
        session = await store.sessions.current(str(runtime.key))  # made when the first memory needed it
        assert session is not None
        assert (session.start_fact_id, memories[0].session_id) == (1, session.id)
        condense = router.requests("condense")[0]
        assert "my cat is called Miso" in condense["messages"][-1]["content"]
        usage = [e.data for e in runtime.context.log.iter_forward() if e.type == "usage"]
        assert [u["purpose"] for u in usage] == ["summarizer"]

        fake_openai.error(400, "the request is malformed", type="invalid_request_error")
        await settle(runtime_of(await th.channel().say("and a dog?")))
        outcomes = [e.name for e in runtime.context.log.iter_forward() if e.name in ("turn.done", "turn.failed")]
        assert outcomes == ["turn.done", "turn.failed"]
        assert router.count("condense") == 1  # the failed turn adds none
        assert await store.memories.count("ana") == 1


async def test_retrieval_gives_a_turn_only_what_its_level_may_read(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    async with memory_host(extra=OWNERS, summarizer="off") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("hello", user_id="42"))
        await settle(runtime)
        store = store_of(runtime)
        here = str(runtime.key)  # made in this chat (memory.scope: sender)
        await store.memories.add(
            "fact", "The owner's garden has tomatoes.", profile="ana", runtime_key=here, min_trust="owner"
        )
        await store.memories.add(
            "fact", "The group likes tomatoes too.", profile="ana", runtime_key=here, min_trust="untrusted"
        )
        await store.memories.add(
            "reminder", "Water the tomatoes.", profile="ana", runtime_key=here, min_trust="untrusted"
        )
        await settle(runtime_of(await channel.say("what about tomatoes?", user_id="3")))
        await settle(runtime_of(await channel.say("tomatoes, again?", user_id="42")))
        untrusted, owner = (system_prompt(body) for body in router.requests()[1:])
        assert MEMORY_HEADER in untrusted
        assert "The group likes tomatoes too." in untrusted
        assert "garden" not in untrusted
        assert "The owner's garden has tomatoes." in owner
        assert "Water the tomatoes." not in owner  # reminders are for heartbeats
        assert "hello" not in system_prompt(router.requests()[0])


async def test_manual_mode_compacts_at_the_threshold_and_the_summary_is_sent_once(
    memory_host: MemoryHost, router: Router, settle: Settle
) -> None:
    router.summaries.append(Reply("They counted sheep up to three."))
    async with memory_host(summarizer="manual", context_window=300, threshold=0.5) as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("one sheep")))
        assert channel.texts() == ["re: one sheep"]
        two = "two sheep" + " baa" * 150  # with it, the session is over half the context window
        runtime = runtime_of(await channel.say(two))
        await settle(runtime)
        # Compacted before the turn that answers it (the seed's rule), and that message carried, not folded.
        assert channel.texts()[-2:] == [AUTO_COMPACT_NOTICE, f"re: {two}"]
        assert router.count("summary") == 1
        assert router.count("condense") == 0
        summary_call = json.dumps(router.requests("summary")[0])
        assert "one sheep" in summary_call
        assert "two sheep" not in summary_call
        entries = list(runtime.context.log.iter_forward())
        boundary = [e for e in entries if e.type == "session"]
        assert [b.data["reason"] for b in boundary] == ["auto"]
        carried = [e for e in entries if e.id > boundary[0].id and e.data.get("carried")]
        assert [e.data["parts"][0]["text"] for e in carried] == [two]
        sent = json.dumps(router.requests("turn")[-1])
        assert sent.count("They counted sheep up to three.") == 1
        assert "one sheep" not in sent
        router.summaries.append(Reply("They counted to two, with much baa."))
        await settle(runtime_of(await channel.say("three sheep")))  # the session is over the threshold again
        sent = json.dumps(router.requests("turn")[-1])
        assert sent.count("They counted to two, with much baa.") == 1
        assert "baa baa" not in sent
        assert "three sheep" in sent
        memories = await store_of(runtime).memories.latest("ana", trust="owner")
        assert [m.type for m in memories] == ["summary", "summary"]


async def test_a_context_overflow_compacts_and_retries_the_turn_once(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: FakeOpenAIServer
) -> None:
    async with memory_host(summarizer="manual") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("first question")))
        router.turns.append(lambda request: fake_openai.context_length_response())
        router.summaries.append(Reply("They asked a first question."))
        runtime = runtime_of(await channel.say("second question"))
        await settle(runtime)
        assert channel.texts() == ["re: first question", RETRY_NOTICE, "re: second question"]
        retry = json.dumps(router.requests()[-1])
        assert retry.count("They asked a first question.") == 1
        assert "second question" in retry
        assert "re: first question" not in retry
        starts = [e.data["triggers"] for e in runtime.context.log.iter_forward() if e.name == "turn.start"]
        assert [t["reason"] for t in starts[-1]] == ["retry"]
        carried = [e for e in runtime.context.log.iter_forward() if e.data.get("carried")]
        assert [e.data["source"]["content"] for e in carried] == ["second question"]


async def test_a_second_overflow_surfaces_the_error(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: FakeOpenAIServer
) -> None:
    async with memory_host() as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("first question")))
        overflow = lambda request: fake_openai.context_length_response()  # noqa: E731
        router.turns.extend([overflow, overflow])
        runtime = runtime_of(await channel.say("second question"))
        await settle(runtime)
        texts = channel.texts()
        assert texts[:2] == ["re: first question", RETRY_NOTICE]
        assert texts[2].startswith(OVERFLOW_FAILED_NOTICE.split("{why}")[0])
        assert len(texts) == 3
        assert router.count("turn") == 3


async def test_summarizer_off_shows_an_overflow_with_what_to_do(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: FakeOpenAIServer
) -> None:
    async with memory_host(summarizer="off") as th:
        router.turns.append(lambda request: fake_openai.context_length_response())
        await settle(runtime_of(await th.channel().say("hello")))
        assert th.channel().texts() == [
            "(The conversation no longer fits my context window. Send /compact to summarize it, or /clear to "
            "start over.)"
        ]
        assert router.count("summary") == 0


async def test_memory_off_for_a_profile(memory_host: MemoryHost, router: Router, settle: Settle) -> None:
    async with memory_host(extra="extends:\n  memory: {enable: false}\n") as th:
        channel = th.channel()
        runtime = runtime_of(await channel.say("remember this"))
        await settle(runtime)
        assert [use.name for use in runtime.context.profile.extends] == ["heartbeat", "skills"]
        assert router.count("condense") == 0
        assert await store_of(runtime).memories.count("ana") == 0
        await channel.say("/status")
        status = channel.texts()[-1]
        assert "memory:" not in status
        assert "skills: 0" in status


async def test_a_corrupt_memory_db_is_left_alone_and_the_persona_keeps_answering(
    memory_host: MemoryHost, router: Router, settle: Settle, caplog: pytest.LogCaptureFixture
) -> None:
    host = memory_host()
    db = host.root / "data" / "memory.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database, it is a shopping list\n")
    with caplog.at_level(logging.ERROR, logger="ishiki_host.host"):
        async with host as th:
            channel = th.channel()
            runtime = runtime_of(await channel.say("still there?"))
            await settle(runtime)
            assert channel.texts() == ["re: still there?"]
            assert runtime.context.services.memory is None
            await channel.say("/status")
            status = channel.texts()[-1]
            await channel.say("/tools disable read")
            refused = channel.texts()[-1]
    assert db.read_bytes() == b"this is not a database, it is a shopping list\n"
    assert "memory: unavailable (" in status
    assert "not an SQLite database" in status
    assert "skills: unavailable (no memory database)" in status
    assert refused.startswith("read is a kernel tool")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("not an SQLite database" in e and "ishiki memory clear" in e and "keep answering" in e for e in errors)


async def test_the_retry_of_an_untrusted_turn_stays_untrusted(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: FakeOpenAIServer
) -> None:
    async with memory_host(extra=OWNERS) as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("hello", user_id="42")))
        router.turns.append(lambda request: fake_openai.context_length_response())
        await settle(runtime_of(await channel.say("tell me the owner's secrets", user_id="3")))
        failed, retry = router.requests()[-2:]
        for body in (failed, retry):
            assert "senders the host does not trust" in system_prompt(body)
        assert "tell me the owner's secrets" in json.dumps(retry)
        store = store_of(runtime_of(await channel.say("/whoami", user_id="42")))
        memories = await store.memories.latest("ana", trust="owner")
        # the owner's exchange and its summary stay the owner's; the untrusted retry's memory is open to all
        assert sorted((m.type, m.min_trust) for m in memories) == [
            ("fact", "owner"),
            ("fact", "untrusted"),
            ("summary", "owner"),
        ]


async def test_a_model_of_its_own_for_the_summarizer(
    memory_host: MemoryHost, router: Router, settle: Settle, fake_openai: FakeOpenAIServer
) -> None:
    models = models_yaml(fake_openai, models=("fake-model", "fake-small"))
    extra = "extends:\n  memory: {config: {model: 'fake:fake-small'}}\n"
    async with memory_host(extra=extra, models=models) as th:
        await settle(runtime_of(await th.channel().say("hello")))
        await th.channel().say("/compact")
    assert [body["model"] for body in router.requests("turn")] == ["fake-model"]
    assert [body["model"] for body in router.requests("condense")] == ["fake-small"]
    assert [body["model"] for body in router.requests("summary")] == ["fake-small"]


async def test_an_unknown_summarizer_model_is_reported_and_the_profiles_model_summarizes(
    memory_host: MemoryHost, router: Router, settle: Settle, caplog: pytest.LogCaptureFixture
) -> None:
    async with memory_host(extra="extends:\n  memory: {config: {model: 'nope:nothing'}}\n") as th:
        await settle(runtime_of(await th.channel().say("hello")))
        await th.channel().say("/status")
        status = th.channel().texts()[-1]
    assert "summarizer model 'nope:nothing' is unknown" in status
    assert router.count("condense") == 1
    assert any("summarizer model 'nope:nothing' is unknown" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("scope", "recalled_elsewhere"), [("sender", False), ("channel", False), ("profile", True)], ids=str
)
async def test_what_one_person_said_in_their_chat_is_not_recalled_in_anothers_by_default(
    memory_host: MemoryHost, router: Router, settle: Settle, scope: str, recalled_elsewhere: bool
) -> None:
    """Issue 20, item 6: memories were scoped by trust only, so a persona serving many people recalled what A
    told it in B's chat. Two users, two private chats (channel mode), then A again in a group."""
    router.memories.append(Reply(json.dumps({"type": "fact", "content": "Aiko's locker code is 4711."})))
    router.memories.append(Reply(json.dumps({"type": "fact", "content": "Ben likes green tea."})))
    async with memory_host(host_extra=f"memory: {{scope: {scope}}}\n") as th:
        channel = th.channel()
        await settle(runtime_of(await channel.say("my locker code is 4711", user_id="1", channel_id="private:1")))
        await settle(runtime_of(await channel.say("I like green tea", user_id="2", channel_id="private:2")))
        ben = runtime_of(await channel.say("what is the locker code?", user_id="2", channel_id="private:2"))
        await settle(ben)
        ben_prompt = system_prompt(router.requests("turn")[-1])
        aiko = runtime_of(await channel.say("my locker code again?", user_id="1", channel_id="group:9"))
        await settle(aiko)
        group_prompt = system_prompt(router.requests("turn")[-1])
        memories = await store_of(ben).memories.latest("ana", trust="owner", count=10)
    assert {"Aiko's locker code is 4711.", "Ben likes green tea."} <= {m.content for m in memories}
    assert "Ben likes green tea." not in ben_prompt  # this session's own memory: the window has it already
    assert ("4711" in ben_prompt) is recalled_elsewhere
    # Aiko in a group she shares with others: her own memory follows her only with scope sender (or profile).
    assert ("4711" in group_prompt) is (scope != "channel")


async def test_memories_lists_only_what_this_chat_and_this_sender_may_recall(tmp_path: Any) -> None:
    async with SessionRig(tmp_path) as rig:
        memories = rig.store.memories
        key = str(rig.rt.key)
        await memories.add("fact", "A's note", profile="test", runtime_key=key, min_trust="trusted",
                           chats=["fake:bot private:1"], senders=["fake:1"])  # fmt: skip
        await memories.add("fact", "B's note", profile="test", runtime_key=key, min_trust="trusted",
                           chats=["fake:bot private:2"], senders=["fake:2"])  # fmt: skip
        await memories.add("fact", "an old note", profile="test", runtime_key="elsewhere", min_trust="trusted")
        invocation = rig.context(sender="fake:2", trust="trusted", channel="fake:bot private:2")
        result = await run_command(rig.table, invocation, "/memories")
    assert result is not None
    assert result.reply is not None
    assert "B's note" in result.reply
    assert "A's note" not in result.reply
    assert "an old note" not in result.reply  # made by another runtime before memories recorded their chats
