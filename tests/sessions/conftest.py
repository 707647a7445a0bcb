"""Fixtures of the wiring tests: a real Host with memory on, and a fake model that tells its callers apart.

``router`` becomes the ``fake_openai`` server's default answer. It sorts each request by its system prompt:
the summarizer's condense call (a memory of an exchange), its summary call (``/compact`` and compactions), or
a persona turn. Each kind answers from its own queue (``router.turns``, ``router.memories``,
``router.summaries``), else a default: a turn answers ``re: <the last user text>`` through send_message. So
a background summary can never take the answer a test scripted for a turn.

``memory_host(...)`` makes a ``TestHost`` whose profile ``ana`` runs the test engines with the summarizer in
``auto`` mode; background calls do not wait for interactive traffic (``interactive_grace_seconds: 0``) so
they run on the fake clock. ``settle(runtime)`` waits until the runtime has nothing left to do, the work
after its turns included (memories, compactions and the retries they queue).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ishiki_host.runtime.runtime import AgentRuntime
from ishiki_host.sessions.summarizer import CONDENSE_SYSTEM, SUMMARY_SYSTEM
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall, profile_yaml
from ishiki_host.testing.host import TestHost, host_yaml, models_yaml
from ishiki_host.testing.http_server import RecordedRequest, Response

Answer = Reply | Response | Callable[[RecordedRequest], "Reply | Response"]
Settle = Callable[[AgentRuntime], Awaitable[None]]
MemoryHost = Callable[..., TestHost]


def send(*messages: str) -> Reply:
    """A persona answer calling send_message with ``messages``."""
    return Reply(tool_calls=(ScriptedCall("send_message", {"messages": list(messages)}),))


def _system(request: RecordedRequest) -> str:
    body = request.json if isinstance(request.json, dict) else {}
    messages = body.get("messages") or [{}]
    content = messages[0].get("content") if messages[0].get("role") == "system" else ""
    return content if isinstance(content, str) else json.dumps(content)


def last_user_text(request: RecordedRequest) -> str:
    """The text of the last user message of a request."""
    body = request.json if isinstance(request.json, dict) else {}
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else " ".join(str(p.get("text", "")) for p in content)


class Router:
    """The fake server's default answer (see the module docstring)."""

    def __init__(self) -> None:
        self.turns: deque[Answer] = deque()
        self.memories: deque[Answer] = deque()
        self.summaries: deque[Answer] = deque()
        self.seen: list[tuple[str, RecordedRequest]] = []
        self._summary_numbers = itertools.count(1)

    def kind(self, request: RecordedRequest) -> str:
        """``condense``, ``summary`` or ``turn``."""
        system = _system(request)
        if system.startswith(CONDENSE_SYSTEM[:40]):
            return "condense"
        if system.startswith(SUMMARY_SYSTEM[:40]):
            return "summary"
        return "turn"

    def __call__(self, request: RecordedRequest) -> Reply | Response:
        kind = self.kind(request)
        self.seen.append((kind, request))
        queue = {"turn": self.turns, "condense": self.memories, "summary": self.summaries}[kind]
        answer = queue.popleft() if queue else self._default(kind, request)
        return answer(request) if callable(answer) and not isinstance(answer, Reply | Response) else answer

    def _default(self, kind: str, request: RecordedRequest) -> Reply:
        if kind == "condense":
            return Reply(json.dumps({"type": "fact", "content": "They talked about the weather."}))
        if kind == "summary":
            return Reply(f"Summary {next(self._summary_numbers)}: they talked about the weather.")
        return send(f"re: {last_user_text(request)}")

    def requests(self, kind: str = "turn") -> list[dict[str, Any]]:
        """The bodies of the requests of one kind, in order."""
        return [r.json for k, r in self.seen if k == kind and isinstance(r.json, dict)]

    def count(self, kind: str) -> int:
        """How many requests of ``kind`` came."""
        return sum(1 for k, _ in self.seen if k == kind)


@pytest.fixture
def router(fake_openai: FakeOpenAIServer) -> Router:
    """The routing default answer of ``fake_openai`` (see the module docstring)."""
    routed = Router()
    fake_openai.default = routed
    return routed


@pytest.fixture
def memory_host(make_host: Callable[..., TestHost], fake_openai: FakeOpenAIServer, router: Router) -> MemoryHost:
    """``memory_host(extra=..., summarizer="auto", threshold=..., files=..., context_window=..., **options)``."""

    def make(
        *,
        extra: str = "",
        summarizer: str = "auto",
        files: dict[str, str] | None = None,
        context_window: int | None = None,
        host_extra: str = "",
        threshold: float | None = None,
        reload_interval: float = 0,
        models: str | None = None,
        **options: Any,
    ) -> TestHost:
        models = models or models_yaml(fake_openai)
        if context_window is not None:
            models = models.replace(
                "- id: fake-model\n", f"- id: fake-model\n        context_window: {context_window}\n"
            )
        session = f"session: {{summarizer: {summarizer}" + (f", compact_threshold: {threshold}" if threshold else "")
        profile = profile_yaml(summarizer=None, extra=session + "}\n" + extra)
        host = host_yaml(reload_interval=reload_interval, extra=host_extra)
        return make_host(profiles={"ana": profile}, models=models, host=host, files=files, **options)

    return make


async def _settle(runtime: AgentRuntime) -> None:
    with anyio.fail_after(20):
        while True:
            await runtime.settled()
            await runtime.settled(background=True)
            await anyio.wait_all_tasks_blocked()
            if runtime.idle_for() is not None:
                return


@pytest.fixture
def settle() -> Settle:
    """``await settle(runtime)``: until its turns and the work after them are all done."""
    return _settle


RunConsole = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run_console(ishiki_bin: Path) -> RunConsole:
    """``run_console(root, lines)``: the real ``ishiki run ROOT`` with ``lines`` piped into its console."""

    def run(root: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENAI_BASE_URL", "OPENAI_MODEL")}
        return subprocess.run(
            [str(ishiki_bin), "run", str(root)],
            input="".join(f"{line}\n" for line in lines),
            capture_output=True,
            text=True,
            env=environ,
            timeout=120,
            check=False,
        )

    return run
