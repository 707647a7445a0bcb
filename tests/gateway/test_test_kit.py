"""The test kit itself: the loopback server, the fake model servers and the network guard."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from ishiki_host.testing import FakeOpenAIServer, RecordedRequest, Reply, Response
from ishiki_host.testing.network_guard import is_loopback


def test_sync_use_records_requests(fake_openai: FakeOpenAIServer) -> None:
    with httpx.Client() as client:
        for n in range(2):  # one kept-alive connection serves both
            answer = client.post(
                f"{fake_openai.base_url}/chat/completions", json={"model": "m", "n": n}, headers={"X-Trace": "t"}
            )
            assert answer.json()["choices"][0]["message"]["content"] == "ok"
    assert [body["n"] for body in fake_openai.bodies] == [0, 1]
    assert fake_openai.last_request.headers["x-trace"] == "t"
    assert fake_openai.last_request.method == "POST"


def test_unknown_routes_and_handler_errors(fake_openai: FakeOpenAIServer) -> None:
    def explode(request: RecordedRequest) -> Response:
        raise RuntimeError("scripted failure")

    with httpx.Client() as client:
        assert client.get(f"{fake_openai.url}/v1/models").status_code == 404
        fake_openai.push(explode)
        broken = client.post(f"{fake_openai.base_url}/chat/completions", json={})
    assert broken.status_code == 500
    assert "scripted failure" in broken.text


def test_answers_may_depend_on_the_request(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.push(lambda request: Reply(f"you said {request.json['messages'][-1]['content']}"))
    fake_openai.default = Reply("default changed")
    with httpx.Client() as client:
        url = f"{fake_openai.base_url}/chat/completions"
        first = client.post(url, json={"messages": [{"role": "user", "content": "ping"}]}).json()
        second = client.post(url, json={"messages": []}).json()
    assert first["choices"][0]["message"]["content"] == "you said ping"
    assert second["choices"][0]["message"]["content"] == "default changed"


def test_streams_are_chunked_as_asked(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.reply("abcdefghij", chunk_size=4)
    with (
        httpx.Client() as client,
        client.stream("POST", f"{fake_openai.base_url}/chat/completions", json={"stream": True}) as answer,
    ):
        assert answer.headers["content-type"] == "text/event-stream"
        body = b"".join(answer.iter_raw())
    assert body.endswith(b"data: [DONE]\n\n")
    assert body.count(b'"content": "abcdefgh"') == 1


def test_a_hang_ends_when_the_server_closes() -> None:
    server = FakeOpenAIServer().start()
    server.hang()
    with httpx.Client(timeout=0.1) as client, pytest.raises(httpx.ReadTimeout):
        client.post(f"{server.base_url}/chat/completions", json={})
    server.close()
    assert len(server.requests) == 1
    with httpx.Client(timeout=1) as client, pytest.raises(httpx.ConnectError):
        client.post(f"{server.base_url}/chat/completions", json={})


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("10.0.0.1", False),
        ("example.com", False),
        ("api.openai.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_the_network_guard_fails_tests_that_reach_out(tmp_path: Path) -> None:
    test_file = tmp_path / "test_reach_out.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import httpx

            def test_direct():
                httpx.get("http://192.0.2.1/v1/models")

            def test_swallowed():
                try:
                    httpx.get("https://api.openai.com/v1/models")
                except Exception:
                    pass

            def test_loopback_is_fine(fake_openai):
                assert httpx.post(fake_openai.base_url + "/chat/completions", json={}).status_code == 200
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "ishiki_network_guard=true",
            str(test_file),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "NetworkGuardError: tests may only reach 127.0.0.1; this test tried http://192.0.2.1/v1/models" in result.stdout
    )
    assert "the test tried to reach non-loopback hosts: https://api.openai.com/v1/models" in result.stdout
    # test_direct fails (and errors at teardown), test_swallowed errors at teardown, the loopback test passes
    assert "1 failed, 2 passed, 2 errors" in result.stdout


def test_changing_the_default_is_seen(fake_openai: FakeOpenAIServer) -> None:
    url = f"{fake_openai.base_url}/chat/completions"
    with httpx.Client() as client:
        for text in ("first", "second", "third"):
            fake_openai.default = Reply(text)
            assert client.post(url, json={}).json()["choices"][0]["message"]["content"] == text
