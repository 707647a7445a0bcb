"""API keys and bot tokens never reach the logs, the data directory or an error message.

A real ``ishiki run`` (subprocess, log level ``debug``: the most it ever says) with known fake secrets: the model
provider's ``api_key`` written in models.yaml, a working Telegram token through ``${VAR}`` and a wrong one
written in ishiki.yaml. The model server refuses the key with a 401 whose message repeats the whole key, as
sent and JSON-escaped (``\\uXXXX``, which decodes to the key again; some OpenAI-compatible servers do), and the
Bot API refuses the wrong token. ``ishiki check`` and ``ishiki models --probe`` run on the same directory. Then
stdout and stderr of every command and every file under ``data/`` are searched for each secret. The fakes
confirm the secrets were really used.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Response

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

API_KEY = "sk-SEKRETkey-4f9a0c1e2b3d4a5b6c7d8e9f"
GOOD_TOKEN = "7000000042:SEKRETgoodTokenPart_AbCdEfGhIjKlMn0"
WRONG_TOKEN = "7000000099:SEKRETwrongTokenPart_ZyXwVuTsRqPo9"
SECRETS = [API_KEY, GOOD_TOKEN, WRONG_TOKEN, GOOD_TOKEN.split(":")[1], WRONG_TOKEN.split(":")[1], "SEKRET"]


@pytest.fixture
def refusing_model() -> Iterator[tuple[FakeOpenAIServer, threading.Event]]:
    asked = threading.Event()

    def refuse(request: RecordedRequest) -> Response:
        asked.set()
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        escaped = "".join(f"\\u{ord(c):04x}" for c in key)
        body = ('{"error": {"message": "Incorrect API key provided: ' + key + ", or as JSON may write it: " + escaped
                + '.", "type": "invalid_request_error", "code": "invalid_api_key"}}')  # fmt: skip
        return Response(401, (("content-type", "application/json"),), body.encode())

    with FakeOpenAIServer() as server:
        server.default = refuse
        yield server, asked


def write_config(root: Path, model: FakeOpenAIServer, bot: FakeBotAPI) -> None:
    files = {
        "ishiki.yaml": (
            "reload_interval_seconds: 0\nshutdown_grace_seconds: 5\nlog_level: debug\nchannels:\n  telegram:\n"
            f"    accounts:\n      - token: ${{GOOD_TOKEN}}\n        api_base: {bot.url}\n"
            f"      - token: '{WRONG_TOKEN}'\n        api_base: {bot.url}\n        startup_timeout: 1\n"
        ),
        "models.yaml": (
            f"providers:\n  fake:\n    api: openai-completions\n    base_url: {model.base_url}\n"
            f"    api_key: {API_KEY}\n    models: [{{id: m}}]\ngroups:\n  default:\n    models: [fake:m]\n"
        ),
        "profiles/ana/profile.yml": "model: default\nchannels:\n  telegram:7000000042: ['*']\n",
        "profiles/ana/persona.md": "You are Ana.\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, "utf-8")


def ishiki(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("ishiki")), *args]


async def test_secrets_appear_in_no_log_file_or_error(
    tmp_path: Path, refusing_model: tuple[FakeOpenAIServer, threading.Event], subprocess_env: dict[str, str]
) -> None:
    model, asked = refusing_model
    root = tmp_path / "bot"
    env = {**subprocess_env, "GOOD_TOKEN": GOOD_TOKEN}
    outputs: list[str] = []
    async with FakeBotAPI(token=GOOD_TOKEN) as bot:
        write_config(root, model, bot)
        for command in (ishiki("check", str(root)), ishiki("models", str(root), "--probe", "--json")):
            done = await anyio.run_process(command, env=env, check=False)
            outputs += [done.stdout.decode(), done.stderr.decode()]
        asked.clear()  # the probe asked already
        log = tmp_path / "run.log"
        with log.open("wb") as out:
            process = await anyio.open_process(ishiki("run", str(root)), stdin=subprocess.DEVNULL, stdout=out,
                                               stderr=subprocess.STDOUT, env=env)  # fmt: skip
        try:
            await bot.until(lambda: bot.polling, deadline=30)
            bot.push_message(private_chat(user(10_001, "Ada")), "hello, can you hear me?")
            assert await anyio.to_thread.run_sync(asked.wait, 30), "the model was never asked"
            process.send_signal(signal.SIGTERM)  # a clean stop lets the failed turn be written down
            with anyio.fail_after(30):
                assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
            await process.aclose()
    outputs.append(log.read_text("utf-8", "replace"))
    assert model.requests[0].headers["authorization"] == f"Bearer {API_KEY}"  # the key was used
    assert any(c.method == "getMe" and not c.ok for c in bot.calls)  # the wrong token was tried and refused
    assert any(c.method == "getUpdates" and c.ok for c in bot.calls)  # the good one works
    data = {p: p.read_bytes() for p in (root / "data").rglob("*") if p.is_file()}
    ends = [json.loads(line)["data"] for p, raw in data.items() if p.name == "facts.jsonl" for line in raw.split(b"\n")
            if line and b'"turn.failed"' in line]  # fmt: skip
    assert ends, "the refused model call left no failed turn to look at"
    assert ends[0]["kind"] == "auth"
    assert "refused the token" in outputs[-1]  # the wrong token was reported, by its bot id
    leaks = [f"{secret!r} in output {i}" for i, text in enumerate(outputs) for secret in SECRETS if secret in text]
    leaks += [f"{secret!r} in {p}" for p, raw in data.items() for secret in SECRETS if secret.encode() in raw]
    assert leaks == []
    assert os.environ.get("GOOD_TOKEN") is None  # the test never put the token in its own environment
