"""``ishiki run`` on a real terminal (a pty): the prompt, a reply printed above it, the thinking line while a
turn runs, a resize mid-turn, ``/stop`` answered while the model hangs, and Ctrl-D leaving cleanly."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from ishiki_host.testing import FakeOpenAIServer, write_config
from ishiki_host.testing.host import models_yaml

pytestmark = pytest.mark.slow

PROFILE = "model: default\nchannels:\n  console:local: ['*']\nsession: {summarizer: off}\n"
PROMPT = "› ".encode()


class Screen:
    """The main side of a pty: what the program wrote, read up to a marker at a time."""

    def __init__(self, fd: int):
        self.fd = fd
        self.seen = bytearray()

    def until(self, marker: bytes, timeout: float = 30.0) -> bytes:
        """Everything up to ``marker`` since the last call (``TimeoutError`` when it never shows: a safety net)."""
        deadline = time.monotonic() + timeout
        while marker not in self.seen:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError(f"{marker!r} did not appear; the terminal showed {bytes(self.seen)!r}")
            self.seen += os.read(self.fd, 65536)
        head, _, tail = bytes(self.seen).partition(marker)
        self.seen[:] = tail
        return head

    def rest(self) -> bytes:
        """What the program wrote since the last ``until`` (without waiting)."""
        while select.select([self.fd], [], [], 0)[0]:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # the program has gone: its side of the pty is closed
                break
            if not chunk:
                break
            self.seen += chunk
        return bytes(self.seen)

    def type(self, keys: bytes) -> None:
        """Type ``keys`` as the user would."""
        os.write(self.fd, keys)

    def resize(self, rows: int, columns: int) -> None:
        """Resize the terminal (the kernel sends SIGWINCH to the foreground group)."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


def test_a_chat_on_a_terminal_with_a_turn_stopped_mid_way(
    ishiki_bin: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    root = write_config(tmp_path / "bot", profiles={"ana": PROFILE}, models=models_yaml(fake_openai))
    fake_openai.tool_call("send_message", {"messages": ["hello, human"]})
    fake_openai.hang()  # the second turn's model never answers
    main, child = pty.openpty()
    # No terminal emulator answers cursor position requests on a bare pty: say so, rather than wait for them.
    env = {**os.environ, "HOME": str(tmp_path), "PROMPT_TOOLKIT_NO_CPR": "1"}
    process = subprocess.Popen(
        [str(ishiki_bin), "run", str(root)],
        stdin=child,
        stdout=child,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    os.close(child)
    screen = Screen(main)
    try:
        screen.until(PROMPT)
        screen.type(b"hi\r")
        screen.until(b"hello, human")  # printed above the prompt...
        screen.until(PROMPT)  # ...which is drawn again below it
        assert process.stderr is not None
        Screen(process.stderr.fileno()).until(b"ana answered 1 message")  # the first turn has ended
        screen.type(b"think hard\r")
        screen.until(b"think hard")
        screen.until(b"thinking ")  # the thinking line while the model hangs
        screen.resize(20, 60)
        os.killpg(process.pid, signal.SIGWINCH)  # and once more, mid-turn, as a terminal emulator would
        screen.type(b"/stop\r")
        screen.until(b"Stopped.")
        screen.type(b"/stop\r")
        screen.until(b"Nothing to stop.")
        screen.type(b"\x04")  # Ctrl-D: the operator leaves
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate(timeout=10)
            pytest.fail(f"still running after Ctrl-D; stderr: {err.decode()}; screen: {screen.rest()!r}")
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
        os.close(main)
    assert process.returncode == 0, err.decode()
    (log,) = (root / "data" / "runtimes").rglob("facts.jsonl")
    events = [e["data"] for e in map(json.loads, log.read_text().splitlines()) if e["type"] == "event"]
    assert [(e["name"], e.get("reason")) for e in events if e["name"] in ("turn.done", "turn.aborted")] == [
        ("turn.done", "sent"),
        ("turn.aborted", "stopped by console:local (/stop)"),
    ]
    assert b"Traceback" not in err
