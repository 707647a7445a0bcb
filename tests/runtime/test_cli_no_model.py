"""``ishiki init`` then ``ishiki run`` with no model that answers, as an operator meets it: real subprocesses.

The sender gets one apology per failure streak on stdout (the chat), stderr says once what to configure in
models.yaml, each failed turn's reason is on stderr (a dim line of the chat on a terminal), and the run still
stops with 0 at the end of input.
"""

from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ishiki_host.testing import FakeOpenAIServer, Response

StartIshiki = Callable[..., Any]  # the ``start_ishiki`` fixture of conftest.py

pytestmark = pytest.mark.slow

SORRY = "Sorry, something went wrong on my side; please try again in a moment."  # the default failure_reply
MEMBER = "local:llama3.1:8b"  # what `ishiki init` writes when OPENAI_MODEL is unset


def closed_port() -> int:
    """A loopback port nothing listens on (connecting to it is refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def init(start_ishiki: StartIshiki, root: Path) -> None:
    code, _, err = start_ishiki("init", str(root)).finish()
    assert code == 0, err


@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["one process", "two workers"])
def test_a_fresh_init_with_no_server_says_once_what_to_configure(
    start_ishiki: StartIshiki, tmp_path: Path, workers: tuple[str, ...]
) -> None:
    root = tmp_path / "mybot"
    init(start_ishiki, root)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    running = start_ishiki("run", str(root), *workers, env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": ""})
    code, out, err = running.finish(input="hello\nstill there?\n")
    assert (code, out) == (0, f"{SORRY}\n"), err  # two failed turns, one streak: one apology
    assert err.count("ishiki run: no model answered") == 1
    assert f"ishiki run: no model answered; configure one in {root / 'models.yaml'}:\n" in err
    assert (
        f"  {MEMBER}: provider 'local' at {url} did not answer (unavailable): start the server there, or set "
        "OPENAI_BASE_URL (set), which providers.local.base_url reads\n"
    ) in err
    assert f"`ishiki models {root} --probe`" in err
    assert err.count("(the turn failed: ModelUnavailable: ") == 2


@pytest.mark.parametrize(
    ("status", "message", "hint"),
    [
        (401, "Incorrect API key", "refused the credentials (auth): set OPENAI_API_KEY (empty), which providers.local"
         ".api_key reads"),
        (404, "model 'llama3.1:8b' not found", "refused the request (bad_request): check that it serves 'llama3.1:8b',"
         " or set OPENAI_MODEL (unset), which providers.local.models[0].id reads"),
    ],
    ids=["auth", "unknown-model"],
)  # fmt: skip
def test_a_refusal_names_the_key_and_the_variable_it_is_read_from(
    start_ishiki: StartIshiki, fake_openai: FakeOpenAIServer, tmp_path: Path, status: int, message: str, hint: str
) -> None:
    fake_openai.default = Response.json(fake_openai.error_body(message, "invalid_request_error", status), status)
    root = tmp_path / "mybot"
    init(start_ishiki, root)
    env = {"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": ""}
    code, out, err = start_ishiki("run", str(root), env=env).finish(input="hello\n")
    assert (code, out) == (0, f"{SORRY}\n"), err
    assert f"  {MEMBER}: provider 'local' at {fake_openai.base_url} {hint}\n" in err
    assert message not in out


class Terminal:
    """``ishiki run`` with stdin and stdout on a pseudo-terminal (the interactive chat); stderr piped."""

    def __init__(self, ishiki: Path, root: Path, env: dict[str, str]):
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [str(ishiki), "run", str(root)], stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env
        )
        os.close(slave)
        self.seen = b""

    def read_until(self, text: str, *, after: int = 0, timeout: float = 30.0) -> int:
        """Read until the terminal shows ``text`` past its first ``after`` bytes; where ``text`` ends
        (``TimeoutError`` if it does not show in time)."""
        wanted, deadline = text.encode(), time.monotonic() + timeout
        while (found := self.seen.find(wanted, after)) < 0:
            ready, _, _ = select.select([self.master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError(f"{text!r} not shown within {timeout} s: {self.seen!r}")
            try:
                self.seen += os.read(self.master, 65536)
            except OSError as exc:  # EIO: the process closed the terminal
                raise EOFError(f"the terminal closed before {text!r}: {self.seen!r}") from exc
        return found + len(wanted)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=30)
        os.close(self.master)
        return self.process.returncode


def test_on_a_terminal_the_reason_is_a_dim_line_of_the_chat(
    start_ishiki: StartIshiki, ishiki_bin: Path, tmp_path: Path
) -> None:
    root = tmp_path / "mybot"
    init(start_ishiki, root)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_MODEL")}
    env.update(OPENAI_BASE_URL=f"http://127.0.0.1:{closed_port()}/v1", OPENAI_API_KEY="", TERM="dumb")
    terminal = Terminal(ishiki_bin, root, env)
    try:
        typed = terminal.read_until("› ")
        terminal.type("hello\n")
        reason = terminal.read_until("\x1b[2m(the turn failed: ModelUnavailable: ", after=typed)
        shown = terminal.seen[typed : terminal.read_until(")\x1b[0m", after=reason)].decode()
        terminal.read_until("› ", after=reason)  # the prompt again: readline reads now (it drops earlier keys)
        terminal.type("\x04")  # Ctrl-D: the end of input
        assert terminal.process.wait(timeout=60) == 0
    finally:
        terminal.close()
    assert f"\x1b[36m{SORRY}\x1b[0m" in shown  # the apology, coloured as the chat is
    assert shown.index(SORRY) < shown.index("\x1b[2m(the turn failed: ModelUnavailable: ")
    assert shown.endswith(")\x1b[0m")
