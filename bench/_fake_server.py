"""The fake OpenAI-compatible server in a process of its own, for benchmarks of the whole host.

Its own process keeps the server's work off the host's core and GIL, as a real model server would be. Every
call is answered with a ``send_message("ok")`` tool call, after ``latency`` seconds; or, given ``text``, with that
text, streamed one piece every ``chunk_delay`` seconds when the call asks for a stream; or, given ``reply``, with
what that Python expression (evaluated in the server's process, ``Reply`` and ``ScriptedCall`` in scope) makes
the server's ``default``: a ``Reply``, or a function of the request returning one (``TOOL_THEN_SEND``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SEND_OK = 'Reply(tool_calls=(ScriptedCall("send_message", {"messages": ["ok"]}),))'
TOOL_THEN_SEND = (
    "lambda request, call=Reply(tool_calls=(ScriptedCall('lookup', {'key': 'k'}),)), "
    f"send={SEND_OK}: send if request.json['messages'][-1]['role'] == 'tool' else call"
)
"""A turn of two calls: ``lookup`` first, then ``send_message("ok")`` once the request ends in a tool result."""
SERVER = """
import sys
from ishiki_host.testing import FakeOpenAIServer, Reply, ScriptedCall
with FakeOpenAIServer() as server:
    server.default = {reply}
    server.latency = {latency}
    server.chunk_delay = {chunk_delay}
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


@contextmanager
def fake_model_process(
    latency: float = 0.0, *, text: str | None = None, chunk_delay: float = 0.0, reply: str | None = None
) -> Iterator[str]:
    """Run the server until the block ends; yields its base URL."""
    if reply is None:
        reply = SEND_OK if text is None else f"Reply({text!r})"
    script = SERVER.format(reply=reply, latency=latency, chunk_delay=chunk_delay)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(10)


def models_yaml(base_url: str, concurrency: int) -> str:
    """A models.yaml whose group ``default`` is the fake server's one model."""
    return (
        f"providers:\n  fake:\n    api: openai-completions\n    base_url: {base_url}\n"
        f"    max_concurrency: {concurrency}\n    models: [{{id: fake-model}}]\n"
        "groups:\n  default:\n    models: [fake:fake-model]\n"
    )
