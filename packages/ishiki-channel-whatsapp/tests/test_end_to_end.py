"""The channel in a real host: a profile claiming ``whatsapp:<phone number id>``, the built-in engines, the fake
OpenAI server as the model, the fake Graph API as Meta, and the host's own HTTP ingress serving the webhook.
In process (``TestHost``, on the fake clock) for conversations and failures; ``ishiki run`` in a subprocess
for a crash between "durable" and "answered 200"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from ishiki_host.testing import RecordedRequest, Reply, ScriptedCall

from ishiki_channel_whatsapp.testing import DEFAULT_APP_SECRET, Fault, WebhookDriver, notification, text_message

pytestmark = pytest.mark.anyio

ALICE = "4915112345678"
SID = "whatsapp:106540352242922"
LABEL = "whatsapp#0"


def user_texts(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]


def send(*messages: str) -> Reply:
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": list(messages)}),))


def answer_by(server: Any, answer) -> None:
    server.default = lambda request: answer(user_texts(request)[-1])


def facts(root: Path, channel: str) -> list[dict[str, Any]]:
    home = root / "data" / "runtimes" / "helper" / SID.replace(":", "%3A") / channel.replace(":", "%3A")
    return [json.loads(line) for line in (home / "facts.jsonl").read_text("utf-8").splitlines()]


def inbound(root: Path, channel: str) -> list[str]:
    return [
        e["data"]["source"]["content"]
        for e in facts(root, channel)
        if e["type"] == "message" and e["data"].get("source")
    ]


async def settled(th) -> None:
    with anyio.fail_after(10):
        for route in th.host.routes:
            for runtime in route.runtimes.values():
                await runtime.settled()


def channel_status(th) -> dict[str, Any]:
    return th.host.status()["channels"][LABEL]


async def test_a_message_is_answered_in_its_chat_with_a_read_receipt(wa_host, whatsapp_graph, fake_openai):
    answer_by(fake_openai, lambda text: send("Hello Alice! Tea is ready."))
    async with wa_host() as th:
        status = channel_status(th)["connection"]
        async with WebhookDriver(status["webhook"], app_secret=DEFAULT_APP_SECRET) as driver:
            answer, (wamid,) = await driver.text(ALICE, "hello, is the tea ready?", name="Alice")
            assert answer.status_code == 200
            await whatsapp_graph.until(lambda: len(whatsapp_graph.sent) == 1)
            await settled(th)
            (await driver.status(whatsapp_graph.sent[0].id, "delivered")).raise_for_status()
            statuses = channel_status(th)["connection"]["statuses"]
    (sent,) = whatsapp_graph.sent
    assert (sent.to, sent.text) == (ALICE, "Hello Alice! Tea is ready.")
    assert any(r.message_id == wamid and r.typing for r in whatsapp_graph.reads)  # shown while the turn ran
    assert inbound(th.root, f"private:{ALICE}") == ["hello, is the tea ready?"]
    assert "hello, is the tea ready?" in user_texts(fake_openai.last_request)[-1]
    assert statuses == {"delivered": 1}


async def test_a_redelivered_message_is_not_answered_twice(wa_host, whatsapp_graph, fake_openai):
    answer_by(fake_openai, lambda text: send("Only once."))
    body = notification(messages=[text_message(ALICE, "hello")])
    async with wa_host() as th:
        url = channel_status(th)["connection"]["webhook"]
        async with WebhookDriver(url, app_secret=DEFAULT_APP_SECRET) as driver:
            assert (await driver.post(body)).status_code == 200
            await whatsapp_graph.until(lambda: len(whatsapp_graph.sent) == 1)
            assert (await driver.post(body)).status_code == 200
            await settled(th)
    assert [m.text for m in whatsapp_graph.sent] == ["Only once."]
    assert inbound(th.root, f"private:{ALICE}") == ["hello"]


async def test_an_unsigned_webhook_reaches_no_runtime(wa_host, whatsapp_graph, fake_openai):
    async with wa_host() as th:
        url = channel_status(th)["connection"]["webhook"]
        async with WebhookDriver(url, app_secret="not-the-app-secret") as driver:
            answer, _ = await driver.text(ALICE, "let me in")
    assert answer.status_code == 401
    assert fake_openai.requests == []
    assert whatsapp_graph.sent == []
    assert not (th.root / "data" / "runtimes").exists() or not list(
        (th.root / "data" / "runtimes").rglob("facts.jsonl")
    )


async def test_an_expired_token_stops_the_channel_and_the_status_says_why(wa_host, whatsapp_graph, fake_openai):
    answer_by(fake_openai, lambda text: send("You will not see this."))
    async with wa_host() as th:
        url = channel_status(th)["connection"]["webhook"]
        whatsapp_graph.fail("messages", Fault.token_expired())
        async with WebhookDriver(url, app_secret=DEFAULT_APP_SECRET) as driver:
            await driver.text(ALICE, "hello")
        await whatsapp_graph.until(lambda: whatsapp_graph.count("messages") == 1)
        with anyio.fail_after(10):
            while channel_status(th)["state"] != "failed":
                await anyio.lowlevel.checkpoint()
        status = channel_status(th)
    assert "now refuses the access token" in status["error"]
    assert whatsapp_graph.token not in status["error"]


@pytest.mark.parametrize(
    ("value", "words"),
    [(None, "environment variable WHATSAPP_TOKEN is not set"), ("", "access_token: must not be empty")],
    ids=["unset", "empty"],
)
async def test_an_unset_token_never_starts_the_account_and_its_profile_waits(
    wa_host, whatsapp_graph, fake_openai, caplog, value, words
):
    async with wa_host(env={"WHATSAPP_TOKEN": value}) as th:
        status = th.host.status()
    assert (status["channels"], status["profiles"]) == ({}, {"helper": "waiting"})
    assert any(words in r.getMessage() for r in caplog.records)
    assert any(
        "waits for channels.whatsapp.accounts[0] (invalid in ishiki.yaml)" in r.getMessage() for r in caplog.records
    )
    assert whatsapp_graph.calls == []


# -- `ishiki run` in a subprocess -------------------------------------------------------------------------------


async def test_a_crash_between_durable_and_answered_200_leads_to_one_answer_after_redelivery(
    wa_config, whatsapp_graph, fake_openai, ishiki, free_port
):
    import threading

    from ishiki_host.testing import Response

    asked, hangs = threading.Event(), [True]

    def answer(text: str):
        if "weather" not in text:
            return send("Good morning!")
        if hangs:  # the first time: the process is killed while the model thinks
            hangs.pop()
            asked.set()
            return Response(hang=True)
        return send("Sunny, 24 degrees.")

    answer_by(fake_openai, answer)
    root = wa_config(listen=f"127.0.0.1:{free_port}")
    url = f"http://127.0.0.1:{free_port}/hooks/whatsapp/0"
    weather = notification(messages=[text_message(ALICE, "what is the weather?")])
    async with anyio.create_task_group() as tg, WebhookDriver(url, app_secret=DEFAULT_APP_SECRET) as driver:
        first = await ishiki(root).start()
        await first.logged("runs as +1 555-010-0000")
        assert (await driver.text(ALICE, "good morning"))[0].status_code == 200
        await whatsapp_graph.until(lambda: len(whatsapp_graph.sent) == 1, deadline=30)
        assert (await driver.post(weather)).status_code == 200  # durable; as if this 200 never reached Meta
        assert await anyio.to_thread.run_sync(asked.wait, 30)  # its turn is asking the model
        await first.kill()

        second = await ishiki(root).start()
        await second.logged("runs as +1 555-010-0000")
        assert (await driver.post(weather)).status_code == 200  # Meta delivers it again
        try:
            await whatsapp_graph.until(lambda: len(whatsapp_graph.sent) == 2, deadline=60)
        except TimeoutError:
            pytest.fail(f"no answer after the restart:\n{second.stderr()}")
        assert await second.stop() == 0
        tg.cancel_scope.cancel()
    assert [m.text for m in whatsapp_graph.sent] == ["Good morning!", "Sunny, 24 degrees."]
    assert inbound(root, f"private:{ALICE}") == ["good morning", "what is the weather?"]
    assert "Traceback" not in second.stderr()
