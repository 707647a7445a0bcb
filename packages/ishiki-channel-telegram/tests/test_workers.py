"""The channel under ``ishiki run --workers 2``: the supervisor polls Telegram, a worker process runs the chat's
runtime. What the runtime needs of the channel crosses the link both ways: a photo is fetched for the worker
through the supervisor's connection (``getFile`` and the download happen once, in the supervisor), and a reply
streamed in the worker is shown as a draft bubble before it is delivered once."""

from __future__ import annotations

import dataclasses
import threading

import anyio
import pytest
from ishiki_host.testing import RecordedRequest, Reply, Response, models_yaml

from ishiki_channel_telegram.testing import private_chat, user

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ALICE = user(42, "Alice")
JPEG = b"\xff\xd8\xff\xe0" + b"jpeg bytes " * 100
ANSWER = "What a fine cat, sitting in the sun like a small lion."


def images_in(request: RecordedRequest) -> list[str]:
    """The image URLs of the user messages the model was shown."""
    urls = []
    for message in request.json["messages"]:
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, list):
            urls += [part["image_url"]["url"] for part in content if part.get("type") == "image_url"]
    return urls


async def test_a_photo_is_fetched_through_the_supervisor_and_the_reply_streams_as_a_draft(
    bot_config, ishiki, telegram_server, fake_openai
):
    held = threading.Event()  # the model's stream stays unfinished until the test saw its draft
    asked = threading.Event()

    def answer(request: RecordedRequest) -> Response:
        streamed = fake_openai.render(Reply(text=ANSWER), request.json, True, 1)
        assert streamed.chunks is not None
        *text, finish, usage, done = streamed.chunks  # role and text; then the end, held back by the gate
        asked.set()
        return dataclasses.replace(streamed, chunks=[b"".join(text), finish + usage + done], gate=held)

    fake_openai.default = answer
    photo = telegram_server.add_file(JPEG)
    root = bot_config()
    models = root / "models.yaml"  # a model that takes images: the worker must read the photo's bytes
    models.write_text(models_yaml(fake_openai).replace("- id: fake-model", "- {id: fake-model, input: [text, image]}"))
    host = await ishiki(root, "--workers", "2").start()
    await telegram_server.until(lambda: telegram_server.polling, deadline=120)
    telegram_server.push_message(private_chat(ALICE), caption="my cat", photo=[photo.as_photo_size(320, 240)])

    assert await anyio.to_thread.run_sync(asked.wait, 60), f"timed out: the model was never asked\n{host.stderr()}"
    (url,) = images_in(fake_openai.last_request)
    assert url.startswith("data:image/jpeg;base64,")  # the worker had the bytes: the supervisor fetched them
    assert telegram_server.downloads == [photo.path]  # once, by the supervisor's connection

    await telegram_server.until(lambda: telegram_server.drafts != [], deadline=120)
    assert all(ANSWER.startswith(frame.text) for frame in telegram_server.drafts)
    assert telegram_server.sent == []  # shown as it is written, not yet delivered
    held.set()
    await telegram_server.until(lambda: len(telegram_server.sent) == 1, deadline=120)
    assert await host.stop() == 0
    [sent] = telegram_server.sent
    assert (sent.chat_id, sent.text) == (42, ANSWER)
    assert {frame.chat_id for frame in telegram_server.drafts} == {42}
    assert "Traceback" not in host.stderr()
