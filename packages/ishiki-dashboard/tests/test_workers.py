"""The dashboard under ``ishiki run --workers 2``: a real supervisor process serves it (and the console, the web
channel, ``/metrics``) while two real worker processes run the runtimes.

``ana`` answers the console and ``bob`` the web chat; their runtime keys hash to different workers (the test
checks it in ``ishiki status``). The conversation view shows the entries ``ana``'s worker wrote, its stream
follows that worker's appends and ends when the worker is killed; the web chat's turn follower reads ``bob``'s
log in the other worker; ``/metrics`` and ``ishiki status`` count the turns of both, and the turns of the
killed worker's life stay counted after it is back.

Each wait is on the host's own output (a log line, a console line, a server-sent event) with a generous cap,
said as "timed out"; ``ishiki status`` is asked again until the workers' last report shows what is awaited
(they report every 2 s).
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from ishiki_host.testing import FakeOpenAIServer

pytestmark = pytest.mark.slow

ISHIKI = Path(sys.executable).parent / "ishiki"
TOKEN = "workers-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONSOLE_KEY = "ana/console:local/private:local"
WEB_KEY = "bob/web:dashboard/private:admin"
WAIT = 60.0
LISTENING = re.compile(r"HTTP: listening on (http://\S+)")


def write_root(root: Path, model_url: str) -> Path:
    """``ana`` on the console, ``bob`` on the web account ``dashboard``, the dashboard with ``TOKEN``."""
    host = {
        "reload_interval_seconds": 0,
        "shutdown_grace_seconds": 2,
        "http": {"listen": "127.0.0.1:0"},
        "plugins": {"dashboard": {"token": TOKEN}},
        "channels": {"web": {"accounts": [{"id": "dashboard"}]}},
    }
    models = {
        "providers": {
            "fake": {
                "api": "openai-completions",
                "base_url": model_url,
                "models": [{"id": "fake-model", "context_window": 32768, "tool_call": True}],
            }
        },
        "groups": {"default": {"models": ["fake:fake-model"]}},
    }
    profiles = {
        "ana": {"model": "default", "channels": {"console:local": ["*"]}, "session": {"summarizer": "off"}},
        "bob": {
            "model": "default",
            "channels": {"web:dashboard": ["*"]},
            "trust": {"owners": ["web:admin"]},
            "session": {"summarizer": "off"},
        },
    }
    root.mkdir(parents=True)
    (root / "ishiki.yaml").write_text(json.dumps(host), "utf-8")  # JSON is YAML
    (root / "models.yaml").write_text(json.dumps(models), "utf-8")
    for name, profile in profiles.items():
        (root / "profiles" / name).mkdir(parents=True)
        (root / "profiles" / name / "profile.yml").write_text(json.dumps(profile), "utf-8")
        (root / "profiles" / name / "persona.md").write_text(f"You are {name}, a test persona.\n", "utf-8")
    return root


class Supervisor:
    """``ishiki run ROOT --workers 2``: the console on its stdin and stdout, its log (stderr) read by a thread."""

    def __init__(self, root: Path):
        self.root = root
        self.proc = subprocess.Popen(
            [str(ISHIKI), "run", str(root), "--workers", "2"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        self._changed = threading.Condition()
        self.readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.log.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_log(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """The first log line matching ``pattern`` (``timed out`` after ``WAIT``)."""
        deadline = time.monotonic() + WAIT
        with self._changed:
            while True:
                for line in self.log:
                    if found := pattern.search(line):
                        return found
                left = deadline - time.monotonic()
                assert left > 0, f"timed out waiting for {pattern.pattern!r}; the log:\n" + "\n".join(self.log)
                self._changed.wait(left)

    def say(self, text: str) -> str:
        """Write ``text`` on the console; the next line the persona sends back."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        try:
            return self.lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"timed out waiting for the answer to {text!r}") from None

    def status(self) -> dict[str, Any]:
        """``ishiki status ROOT --json``."""
        done = subprocess.run(
            [str(ISHIKI), "status", str(self.root), "--json"], capture_output=True, text=True, timeout=WAIT, check=False
        )
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def status_until(self, holds: Any, what: str) -> dict[str, Any]:
        """``status()`` asked again until ``holds(report)`` (the workers report every 2 s)."""
        deadline = time.monotonic() + WAIT
        report = self.status()
        while not holds(report):
            assert time.monotonic() < deadline, f"timed out: ishiki status never showed {what}: {report}"
            report = self.status()
        return report

    def stop(self) -> None:
        """SIGTERM, and a clean exit."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(WAIT)
        assert code == 0, "\n".join(self.log)
        assert not any("Traceback" in line for line in self.log), "\n".join(self.log)


@pytest.fixture
def supervisor(tmp_path: Path, fake_openai: FakeOpenAIServer) -> Iterator[Supervisor]:
    """The running supervisor (killed at the end if the test did not stop it)."""
    running = Supervisor(write_root(tmp_path / "bot", fake_openai.base_url))
    yield running
    if running.proc.poll() is None:
        running.proc.kill()
        running.proc.wait(WAIT)
    for reader in running.readers:  # they end at the end of the output
        reader.join(WAIT)
    for stream in (running.proc.stdin, running.proc.stdout, running.proc.stderr):
        if stream is not None:
            stream.close()


def sse_events(answer: httpx.Response) -> Iterator[tuple[str, str]]:
    """The ``(event, data)`` pairs of a server-sent event stream (``message`` when unnamed)."""
    name, data = "message", []
    for line in answer.iter_lines():
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])


def until(events: Iterator[tuple[str, str]], text: str) -> list[tuple[str, str]]:
    """The events up to the first whose data holds ``text`` (the client's read timeout is the cap)."""
    seen = []
    for event in events:
        seen.append(event)
        if text in event[1]:
            return seen
    raise AssertionError(f"the stream ended before {text!r}: {seen}")


def sample(page: str, name: str, **labels: str) -> float | None:
    """The value of the series ``name{labels}`` on a Prometheus page (``None`` when it is not there)."""
    for line in page.splitlines():
        head, _, value = line.rpartition(" ")
        if head.startswith(name + "{") and all(f'{k}="{v}"' in head for k, v in labels.items()):
            return float(value)
    return None


def test_the_dashboard_and_metrics_see_the_runtimes_of_both_workers(
    supervisor: Supervisor, fake_openai: FakeOpenAIServer
) -> None:
    base = supervisor.wait_log(LISTENING).group(1)
    supervisor.wait_log(re.compile("channel console is up"))
    supervisor.wait_log(re.compile("host plugin dashboard is up"))
    fake_openai.tool_call("send_message", {"messages": ["first"]}, usage=(11, 3))
    assert supervisor.say("words from the console") == "first"

    with httpx.Client(base_url=f"{base}/dashboard", headers=AUTH, timeout=WAIT) as dash:
        view = dash.get(f"/conversations/view?key={quote(CONSOLE_KEY, safe='')}")
        assert view.status_code == 200, view.text
        assert "not running" not in view.text
        assert "words from the console" in view.text  # the person's words and the call, as ana's worker wrote them
        assert "Calls <code>send_message</code>" in view.text
        found = re.search(r'data-sse="([^"]+)"', view.text)
        assert found is not None, view.text
        stream_path = found.group(1).replace("&amp;", "&").removeprefix("/dashboard")

        with dash.stream("GET", stream_path) as answer:  # the conversation's stream, from the worker's appends
            assert answer.status_code == 200
            events = sse_events(answer)
            fake_openai.tool_call("send_message", {"messages": ["second"]}, usage=(12, 4))
            assert supervisor.say("more console words") == "second"
            seen = until(events, "more console words")
            assert all(name == "message" for name, _ in seen)

            with dash.stream("GET", "/chat/stream?account=dashboard") as chat:  # bob, on the other worker
                assert chat.status_code == 200
                fake_openai.tool_call("send_message", {"messages": ["from bob"]}, usage=(13, 5))
                said = dash.post("/chat/say", json={"account": "dashboard", "text": "hello bob"})
                assert said.status_code == 202, said.text
                chatted = [data for _, data in until(sse_events(chat), "turn ended")]  # read from bob's log
            assert any("from bob" in data for data in chatted)
            assert any("<code>send_message</code>" in data for data in chatted)  # the tool call, from the log

            report = supervisor.status_until(
                lambda r: sum(len(w["routes"].get("ana", []) + w["routes"].get("bob", [])) for w in r["workers"]) == 2,
                "both runtimes",
            )
            owners = {key: w for w in report["workers"] for keys in w["routes"].values() for key in keys}
            assert owners[CONSOLE_KEY]["index"] != owners[WEB_KEY]["index"]  # one runtime on each worker
            listed = dash.get("/conversations")
            assert CONSOLE_KEY in listed.text
            assert WEB_KEY in listed.text

            page = httpx.get(f"{base}/metrics", timeout=WAIT).text  # counted by both workers, one page
            assert sample(page, "ishiki_turns_total", profile="ana", status="done") == 2
            assert sample(page, "ishiki_turns_total", profile="bob", status="done") == 1
            assert sample(page, "ishiki_tool_calls_total", profile="bob", tool="send_message") == 1
            assert sample(page, "ishiki_tokens_total", profile="ana", kind="input") == 23
            assert sample(page, "ishiki_tokens_total", profile="bob", kind="output") == 5
            assert sample(page, "ishiki_runtimes", profile="bob") == 1
            report = supervisor.status_until(lambda r: r["activity"]["turnsLastHour"] == 3, "three turns")
            assert report["gateway"]["providers"]["fake"]["calls"] == 3  # the workers' gateways, summed

            ana_worker = owners[CONSOLE_KEY]
            os.kill(ana_worker["pid"], signal.SIGKILL)
            ended = until(events, "stopped")  # the stream ends with the worker that wrote the log
            assert ended[-1][0] == "end"
        supervisor.wait_log(re.compile(rf"worker {ana_worker['index']} died \(SIGKILL\)"))

        fake_openai.tool_call("send_message", {"messages": ["third"]}, usage=(14, 6))
        assert supervisor.say("after the kill") == "third"  # answered by the new life of ana's worker
        page = httpx.get(f"{base}/metrics", timeout=WAIT).text
        assert sample(page, "ishiki_turns_total", profile="ana", status="done") == 3  # the dead life's 2 kept
        assert sample(page, "ishiki_tokens_total", profile="ana", kind="input") == 37
        view = dash.get(f"/conversations/view?key={quote(CONSOLE_KEY, safe='')}")
        assert "after the kill" in view.text  # the new life's view, from the same log
        assert "more console words" in view.text
    supervisor.stop()
