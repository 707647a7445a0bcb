"""A picture of each person: profiles kept by the summarizer's model, shown only when that person speaks, at
their level, and the owner's /memory about."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from ishiki_host.core.entries import Entry
from ishiki_host.core.model import ModelRequest, ModelResult
from ishiki_host.errors import ModelUnavailable
from ishiki_host.memory.people import PEOPLE_HEADER, UNCHANGED, PeopleKeeper, people_section, subjects_speaking
from ishiki_host.store import MemoryStore
from ishiki_host.store.repos.people import MAX_PROFILE_CHARS
from ishiki_host.testing import FunctionModel, reply

pytestmark = pytest.mark.anyio

PRIVATE, GROUP = "private:1", "group:9"


def said(user: str, text: str, *, name: str | None = None, channel: str = PRIVATE) -> Entry:
    who: dict[str, Any] = {"id": user, **({"name": name} if name else {})}
    source = {"platform": "tg", "selfId": "bot", "channelId": channel, "user": who}
    return Entry(1, "message", 0.0, {"role": "user", "parts": [{"type": "text", "text": text}], "source": source})


def answered(text: str) -> Entry:
    return Entry(2, "message", 0.0, {"role": "assistant", "parts": [{"type": "text", "text": text}]})


def asks(model: FunctionModel) -> list[str]:
    return [str(request.messages[0].text) for request in model.requests]


async def test_the_store_keeps_the_highest_level_and_the_owner_edits_keep_it(store: MemoryStore) -> None:
    await store.people.keep("ana", "tg:7", "sender", "Name: Bo", name="Bo", trust="owner")
    kept = await store.people.keep("ana", "tg:7", "sender", "Name: Bo\nLikes: tea", name=None, trust="untrusted")
    assert (kept.min_trust, kept.name, kept.edited_by) == ("owner", "Bo", "summarizer")
    edited = await store.people.edit("ana", "tg:7", "Name: Bo. Prefers green tea.")
    assert edited is not None
    assert (edited.content, edited.min_trust, edited.edited_by) == ("Name: Bo. Prefers green tea.", "owner", "owner")
    assert await store.people.edit("ana", "tg:8", "nobody") is None
    long = await store.people.keep("ana", "tg:8", "sender", "x" * 5000, name=None, trust="trusted")
    assert len(long.content) == MAX_PROFILE_CHARS


async def test_shown_only_for_the_subjects_asked_at_the_turns_level(store: MemoryStore) -> None:
    await store.people.keep("ana", "tg:7", "sender", "Bo likes tea.", name="Bo", trust="trusted")
    await store.people.keep("ana", "tg:8", "sender", "Cy is the owner.", name="Cy", trust="owner")
    await store.people.keep("bob", "tg:7", "sender", "Another persona's notes.", name="Bo", trust="untrusted")
    assert [p.subject for p in await store.people.shown("ana", ["tg:8", "tg:7"], trust="owner")] == ["tg:8", "tg:7"]
    assert [p.subject for p in await store.people.shown("ana", ["tg:8", "tg:7"], trust="trusted")] == ["tg:7"]
    assert await store.people.shown("ana", ["tg:7"], trust="untrusted") == []
    assert [p.subject for p in await store.people.find("ana", "bo")] == ["tg:7"]
    assert [p.subject for p in await store.people.find("ana", "8")] == ["tg:8"]
    assert [p.subject for p in await store.people.find("ana", "tg:7")] == ["tg:7"]
    assert await store.people.find("ana", "%") == []
    assert await store.people.delete("ana", "tg:7")
    assert not await store.people.delete("ana", "tg:7")


async def test_the_section_shows_only_the_people_speaking(store: MemoryStore) -> None:
    await store.people.keep("ana", "tg:7", "sender", "Name: Bo\nLikes: tea", name="Bo", trust="trusted")
    await store.people.keep("ana", "tg:8", "sender", "Name: Cy", name="Cy", trust="trusted")
    section = await people_section(store, [said("7", "hi")], profile="ana", trust="trusted")
    assert section == f"{PEOPLE_HEADER}\n- Bo (tg:7): Name: Bo / Likes: tea"
    assert await people_section(store, [said("9", "what about Bo?")], profile="ana", trust="trusted") is None
    assert await people_section(store, [said("7", "hi")], profile="ana", trust="untrusted") is None


def test_subjects_are_the_senders_then_the_group() -> None:
    entries = [said("7", "a", name="Bo", channel=GROUP), said("8", "b", channel=GROUP), said("7", "c")]
    assert subjects_speaking(entries) == [
        ("tg:7", "sender", "Bo"),
        ("tg:8", "sender", None),
        ("tg:bot group:9", "chat", None),
    ]


async def test_the_keeper_asks_once_per_person_and_group_and_stores_what_changed(store: MemoryStore) -> None:
    def answer(request: ModelRequest) -> ModelResult:
        system = str(request.messages[0].text)
        return reply(UNCHANGED if "one group chat" in system else "Name: Bo\nLikes: green tea")

    model = FunctionModel(answer)
    keeper = PeopleKeeper(model, store)
    exchange = [said("7", "I love green tea", name="Bo", channel=GROUP), answered("Noted!")]
    assert await keeper.keep("ana", exchange, trust="untrusted") == 1
    assert len(model.requests) == 2
    assert "Bo (tg:7) themselves" in asks(model)[0]
    assert "I love green tea" in str(model.requests[0].messages[1].text)
    assert {r.priority for r in model.requests} == {"background"}
    person = await store.people.get("ana", "tg:7")
    assert person is not None
    assert (person.content, person.min_trust, person.name) == ("Name: Bo\nLikes: green tea", "untrusted", "Bo")
    assert await store.people.get("ana", "tg:bot group:9") is None
    await keeper.keep("ana", exchange, trust="untrusted")
    assert "<profile>\nName: Bo\nLikes: green tea\n</profile>" in str(model.requests[-2].messages[1].text)


async def test_a_failing_model_is_logged_not_raised(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    def down(request: ModelRequest) -> ModelResult:
        raise ModelUnavailable("down", model="m")

    with caplog.at_level(logging.WARNING, "ishiki_host.memory"):
        assert await PeopleKeeper(FunctionModel(down), store).keep("ana", [said("7", "hi")], trust="owner") == 0
    assert "the profile of tg:7 was not updated: down" in caplog.text
