"""How soon a person sees the reply being written: the time from a message to the first character of the reply
on screen, as a ratio to the model's own first-token time measured in the same run.

The model is the fake OpenAI-compatible server in a process of its own (``bench/_fake_server.py``),
answering every call with a 60-word text after a first-token time of 300 ms (``--first-token``), then one word
every 20 ms (``--word``), so the whole answer takes about 1.5 s: a reply that is only shown once it is complete
would come at about 5x the first-token time.

- **baseline**, the model's own first-token time: a plain httpx streaming request to the server, from sending
  it to the first text delta parsed.
- **Telegram**: a real host (``TestHost`` on the system clock, the Telegram channel, fact logs on disk) polling
  the loopback fake Bot API in this process; from pushing a private message into the fake to the fake
  receiving the first ``sendMessageDraft`` with text (``drafts: auto``); and the same with ``drafts: off``, the
  final message (``sendMessage``) being the first thing shown, for comparison.
- **console**: ``ishiki run`` on a pseudo-terminal (the prompt_toolkit console); from writing the line to the
  terminal to the first character of the reply read from it.

Each run measures the baseline and the host back to back (paired); 3 runs (``--quick``) or 7.

    .venv/bin/python bench/streaming.py [--quick] [--runs N] [--json PATH]
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import anyio
import httpx
from _fake_server import fake_model_process, models_yaml
from _report import Bench, run
from ishiki_channel_telegram.testing import FakeBotAPI, private_chat, user

from ishiki_host.core.clock import SystemClock
from ishiki_host.testing.host import TestHost, profile_yaml, write_config

WORDS = 60
TEXT = " ".join(f"word{i}" for i in range(WORDS)) + "."
FIRST_TOKEN, WORD = 0.3, 0.02
CPR = "\x1b[6n"  # a cursor position request
READ_CAP = 60.0  # a safety net only: a run that takes this long is reported as timed out


async def first_token(base_url: str) -> float:
    """Seconds from sending a streaming request to its first text delta."""
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with httpx.AsyncClient(timeout=READ_CAP) as client:
        start = time.perf_counter()
        async with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: {"):
                    continue
                delta = json.loads(line[6:])["choices"][0].get("delta", {})
                if delta.get("content"):
                    return time.perf_counter() - start
    raise RuntimeError("the stream carried no text")


async def telegram_first_visible(base_url: str, root: Path, drafts: str) -> float:
    """Seconds from a private message pushed into the fake Bot API to the first text Telegram would show."""
    async with FakeBotAPI() as bot:
        bot_id = bot.token.split(":")[0]
        account = f"{{token: '{bot.token}', api_base: '{bot.url}', poll_timeout: 30, drafts: '{drafts}'}}"
        host = f"channels:\n  telegram:\n    accounts: [{account}]\n"
        profile = profile_yaml(f"telegram:{bot_id}: ['*']")
        config = write_config(root, profiles={"ana": profile}, models=models_yaml(base_url, 4), host=host)
        async with TestHost(config, clock=SystemClock()):
            await bot.until(lambda: bot.polling, deadline=READ_CAP)
            start = time.perf_counter()
            bot.push_message(private_chat(user(7, "Mia")), "hello")
            shown = (lambda: bool(bot.drafts)) if drafts == "auto" else (lambda: bool(bot.sent))
            await bot.until(shown, deadline=READ_CAP)
            elapsed = time.perf_counter() - start
            await bot.until(lambda: bool(bot.sent), deadline=READ_CAP)  # the reply's end, before the host stops
    return elapsed


def console_first_visible(base_url: str, root: Path) -> float:
    """Seconds from a line typed on the console's terminal to the first character of the reply on it."""
    # ``ishiki run`` has only the installed engines (profile_yaml's are the test harness's).
    profile = "model: default\nchannels:\n  console:local: ['*']\nsession: {summarizer: 'off'}\n"
    config = write_config(root, profiles={"ana": profile}, models=models_yaml(base_url, 4), host="channels: {}\n")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # a pty starts 0 x 0
    ishiki = Path(sys.executable).with_name("ishiki")
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "200", "LINES": "50"}
    proc = subprocess.Popen([str(ishiki), "run", str(config)], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    try:
        _read_until(master, "›")  # the prompt is up
        os.write(master, b"hello\r")
        start = time.perf_counter()
        _read_until(master, "word0")
        elapsed = time.perf_counter() - start
        _read_until(master, f"word{WORDS - 1}")
        return elapsed
    finally:
        proc.terminate()
        proc.wait(30)
        os.close(master)


def _read_until(fd: int, wanted: str) -> str:
    seen, deadline = "", time.monotonic() + READ_CAP
    while wanted not in seen:
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {wanted!r} on the console (saw {seen[-300:]!r})")
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            data = os.read(fd, 65536).decode(errors="replace")
            if CPR in data:  # answer as a terminal does: prompt_toolkit waits up to 1 s for where the cursor is
                os.write(fd, b"\x1b[1;1R" * data.count(CPR))
            seen += data
    return seen


def measure(bench: Bench) -> None:
    """Paired runs of the model's first token against the first character the host shows."""
    runs = bench.runs(quick=3, full=7)
    model, telegram, telegram_final, console = [], [], [], []
    server = fake_model_process(FIRST_TOKEN, text=TEXT, chunk_delay=WORD)
    with server as base_url, tempfile.TemporaryDirectory() as scratch:
        for index in range(runs):
            model.append(anyio.run(first_token, base_url))
            root = Path(scratch, str(index))
            telegram.append(anyio.run(telegram_first_visible, base_url, root / "telegram", "auto"))
            telegram_final.append(anyio.run(telegram_first_visible, base_url, root / "final", "off"))
            console.append(console_first_visible(base_url, root / "console"))
    common = {"baseline": "the model's first token", "baseline_samples": model, "paired": True}
    bench.add("Telegram: first character of the draft", "s", telegram, target="<= 1.5", **common)
    bench.add("Telegram, drafts off: the final message", "s", telegram_final, **common)
    bench.add("console on a terminal: first character", "s", console, target="<= 1.5", **common)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    return run(measure, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
