"""The channel in a real host: a profile claiming ``onebot:10001`` (with the ``onebot`` extension), the built-in
engines, the fake OpenAI server as the model and the fake OneBot implementation as NapCat. In process
(``TestHost``, on the fake clock) for conversations; ``ishiki run`` in a subprocess for a restart in forward
mode and a crash between "durable" and "answered" in HTTP mode."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_host.testing import RecordedRequest, Reply, Response, ScriptedCall, TestHost

from ishiki_channel_onebot.testing import at, text

pytestmark = pytest.mark.anyio

ALICE = 20001
SID = "onebot:10001"


def user_texts(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


def send(*messages: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": list(messages)}),))


def answer_by(server: Any, answer) -> None:
    server.default = lambda request: answer(user_texts(request)[-1])


def inbound(root: Path, channel: str) -> list[str]:
    home = root / "data" / "runtimes" / "helper" / SID.replace(":", "%3A") / channel.replace(":", "%3A")
    entries = [json.loads(line) for line in (home / "facts.jsonl").read_text("utf-8").splitlines()]
    return [e["data"]["source"]["content"] for e in entries if e["type"] == "message" and e["data"].get("source")]


async def settled(th: TestHost) -> None:
    with anyio.fail_after(10):
        for route in th.host.routes:
            for runtime in route.runtimes.values():
                await runtime.settled()


async def test_a_private_message_is_answered_and_a_group_message_only_when_addressed(
    ob_config, ob_env, onebot, fake_openai, fake_clock
):
    answer_by(fake_openai, lambda said: send(f"You said: {said.splitlines()[-1][-20:]}"))
    async with TestHost(ob_config(), clock=fake_clock, env=ob_env) as th:
        connection = th.host.channel(SID)
        await connection.linked()
        await onebot.push_private(ALICE, "hello bot", nickname="Alice")
        await onebot.until(lambda: len(onebot.sent) == 1)
        await onebot.push_group(300, 20002, "just chatting")
        await onebot.push_group(300, 20002, [at(onebot.self_id), text(" what now?")], card="Bo")
        await onebot.until(lambda: len(onebot.sent) == 2)
        await settled(th)
        status = th.host.status()["channels"]["onebot#0"]["connection"]
    private, group = onebot.sent
    assert (private.message_type, private.target) == ("private", ALICE)
    assert "hello bot" in private.text
    assert (group.message_type, group.target) == ("group", 300)
    assert "what now?" in group.text
    assert inbound(th.root, "group:300") == ["just chatting", "@10001 what now?"]
    assert status["link"] == "up"
    assert status["taken"] == 3


async def test_an_action_that_never_answers_gives_the_turn_an_error_result(
    ob_config, ob_env, onebot, fake_openai, fake_clock
):
    results: list[str] = []
    told = threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        tools = [str(m["content"]) for m in request.json["messages"] if m["role"] == "tool"]
        if not tools:
            return send("this will hang")
        results.extend(tools)
        told.set()
        return Reply(tool_calls=(ScriptedCall("finish", {}),))

    fake_openai.default = answer
    async with TestHost(ob_config(action_timeout=3), clock=fake_clock, env=ob_env) as th:
        connection = th.host.channel(SID)
        await connection.linked()
        onebot.hang("send_private_msg")
        await onebot.push_private(ALICE, "hello")
        await onebot.until(lambda: onebot.count("send_private_msg") == 1)
        with anyio.fail_after(10):
            await fake_clock.wait_for_sleepers(1)
        await fake_clock.advance(3.0)
        assert await anyio.to_thread.run_sync(told.wait, 10)
    assert "had no answer within 3 s" in results[-1]


# -- `ishiki run` in a subprocess -------------------------------------------------------------------------------


def hang_once_on(word: str, then: str):
    asked, hangs = threading.Event(), [True]

    def answer(said: str):
        if word not in said:
            return send("Good morning!")
        if hangs:  # the first time: the process is killed while the model thinks
            hangs.pop()
            asked.set()
            return Response(hang=True)
        return send(then)

    return asked, answer


async def kill_while_thinking_then_repeat(ishiki, root, onebot, asked, *, ready: str, times: int) -> str:
    """Run the host, answer "good morning", kill it while the model thinks about the weather, start it again,
    send the weather event ``times`` more (a replay, a repost), and wait for the second answer; the second
    host's stderr."""
    first = await ishiki(root).start()
    await first.logged(ready)
    await onebot.push_private(ALICE, "good morning")
    await onebot.until(lambda: len(onebot.sent) == 1, deadline=30)
    weather = await onebot.push_private(ALICE, "what is the weather?")
    assert await anyio.to_thread.run_sync(asked.wait, 30)  # durable; its turn is asking the model
    await first.kill()

    second = await ishiki(root).start()
    await second.logged(ready)
    for _ in range(times):
        await onebot.push(weather)
    try:
        await onebot.until(lambda: len(onebot.sent) == 2, deadline=60)
    except TimeoutError:
        pytest.fail(f"no answer after the restart:\n{second.stderr()}")
    assert await second.stop() == 0
    return second.stderr()


async def test_forward_a_restart_reconnects_and_a_replayed_event_is_answered_once(
    ob_config, onebot, fake_openai, ishiki
):
    asked, answer = hang_once_on("weather", "Sunny, 24 degrees.")
    answer_by(fake_openai, answer)
    root = ob_config()
    stderr = await kill_while_thinking_then_repeat(ishiki, root, onebot, asked, ready="linked", times=2)
    assert [m.text for m in onebot.sent] == ["Good morning!", "Sunny, 24 degrees."]
    assert inbound(root, f"private:{ALICE}") == ["good morning", "what is the weather?"]
    assert "Traceback" not in stderr


async def test_http_a_crash_between_durable_and_answered_leads_to_one_answer_after_the_repost(
    ob_config, onebot, fake_openai, ishiki, free_port
):
    asked, answer = hang_once_on("weather", "Rain later.")
    answer_by(fake_openai, answer)
    root = ob_config(mode="http", listen=f"127.0.0.1:{free_port}")
    onebot.post_events_to(f"http://127.0.0.1:{free_port}/hooks/onebot/0")
    await kill_while_thinking_then_repeat(ishiki, root, onebot, asked, ready="runs as onebot:10001", times=1)
    assert onebot.posts == [204, 204, 204]  # the weather answered 204 before the kill: posted again, as if lost
    assert [m.text for m in onebot.sent] == ["Good morning!", "Rain later."]
    assert inbound(root, f"private:{ALICE}") == ["good morning", "what is the weather?"]


async def test_a_wrong_access_token_is_shown_in_the_status_and_retried_with_back_off(
    ob_config, onebot, fake_openai, fake_clock
):
    async with TestHost(ob_config(), clock=fake_clock, env={"ONEBOT_ACCESS_TOKEN": "not-the-token"}) as th:
        await onebot.until(lambda: onebot.refused == 1)
        with anyio.fail_after(10):
            await fake_clock.wait_for_sleepers(1)  # the host's restart back-off
        status = th.host.status()["channels"]["onebot#0"]
        await fake_clock.advance(fake_clock.next_deadline() - fake_clock.now())
        await onebot.until(lambda: onebot.refused == 2)
    assert status["state"] == "waiting"
    assert "refused the access token (HTTP 401)" in status["error"]
    assert "not-the-token" not in status["error"]
