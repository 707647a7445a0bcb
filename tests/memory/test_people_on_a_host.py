"""On a real Host with ``people: true``: the summarizer's model keeps a profile of each sender, a turn shows
only the profiles of those speaking at its level, and the owner reads and rewrites them with /memory about."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from ishiki_host.host.delivery import RuntimeDelivery
from ishiki_host.memory.people import PEOPLE_HEADER, PEOPLE_SYSTEM
from ishiki_host.testing import FakeOpenAIServer, MakeHost, Reply, profile_yaml
from ishiki_host.testing.http_server import RecordedRequest
from tests.sessions.conftest import Router, _settle, last_user_text

pytestmark = pytest.mark.anyio

PROFILE = (
    "session: {summarizer: auto}\n"
    "trust: {owners: ['fake:42'], trusted: ['fake:7']}\n"
    "extends: {memory: {config: {people: true}}}\n"
)


class PeopleRouter(Router):
    """``Router`` that also tells the profile keeper's calls apart (``people``)."""

    def __init__(self) -> None:
        super().__init__()
        self.people: deque[Reply] = deque()

    def kind(self, request: RecordedRequest) -> str:
        body = request.json if isinstance(request.json, dict) else {}
        system = str((body.get("messages") or [{}])[0].get("content", ""))
        return "people" if system.startswith(PEOPLE_SYSTEM.split("{")[0]) else super().kind(request)

    def __call__(self, request: RecordedRequest) -> Reply:
        if self.kind(request) != "people":
            answer = super().__call__(request)
            assert isinstance(answer, Reply)
            return answer
        self.seen.append(("people", request))
        return self.people.popleft() if self.people else Reply("UNCHANGED")


@pytest.fixture
def router(fake_openai: FakeOpenAIServer) -> PeopleRouter:
    routed = PeopleRouter()
    fake_openai.default = routed
    return routed


def system_prompt(body: Any) -> str:
    return str(body["messages"][0]["content"])


async def test_profiles_are_kept_shown_to_their_person_and_edited_by_the_owner(
    make_host: MakeHost, router: PeopleRouter
) -> None:
    router.people.append(Reply("Name: Bo\nLikes: green tea"))
    async with make_host(profiles={"ana": profile_yaml(summarizer=None, extra=PROFILE)}) as th:
        channel = th.channel()
        first = await channel.say("I love green tea", user_id="7", user_name="Bo")
        assert isinstance(first, RuntimeDelivery)
        await _settle(first.runtime)
        assert router.count("people") == 1
        asked = next(request for kind, request in router.seen if kind == "people")
        assert "I love green tea" in last_user_text(asked)
        for user, expect in (("7", True), ("42", False)):
            delivery = await channel.say("hello again", user_id=user)
            assert isinstance(delivery, RuntimeDelivery)
            await _settle(delivery.runtime)
            prompt = system_prompt(router.requests()[-1])
            assert (PEOPLE_HEADER in prompt) is expect, user
            assert ("Bo (fake:7): Name: Bo / Likes: green tea" in prompt) is expect
        await channel.say("/memory about @bo", user_id="7")
        assert channel.texts()[-1] == "Only the owner may read or change what I keep about people."
        await channel.say("/memory about @Bo", user_id="42")
        assert "What I keep about Bo (fake:7; shown at trusted level and above" in channel.texts()[-1]
        assert channel.texts()[-1].endswith("Name: Bo\nLikes: green tea")
        await channel.say("/memory about @7 Name: Bo. Drinks only matcha.", user_id="42")
        assert "last written by the owner):\nName: Bo. Drinks only matcha." in channel.texts()[-1]
        await channel.say("/memory about @nobody", user_id="42")
        assert channel.texts()[-1] == "I keep no profile of @nobody."
        await channel.say("/memory about @bo forget", user_id="42")
        assert channel.texts()[-1] == "Forgot the profile of Bo."
