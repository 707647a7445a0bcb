"""The fake model servers can answer slowly, like a model that takes its time (for load benchmarks)."""

from __future__ import annotations

import httpx
import pytest

from ishiki_host.testing import FakeOpenAIServer, Reply


def test_latency_delays_every_answer_and_zero_answers_at_once(fake_openai: FakeOpenAIServer) -> None:
    url = f"{fake_openai.base_url}/chat/completions"
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    fake_openai.latency = 30.0
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url, json=body, timeout=httpx.Timeout(5.0, read=0.2))
    fake_openai.latency = 0.0
    answer = httpx.post(url, json=body, timeout=10.0)
    assert answer.json()["choices"][0]["message"]["content"] == "ok"


def test_chunk_delay_paces_a_streamed_answer_piece_by_piece(fake_openai: FakeOpenAIServer) -> None:
    url = f"{fake_openai.base_url}/chat/completions"
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    fake_openai.default = Reply("one two three")
    fake_openai.chunk_delay = 600.0
    with httpx.stream("POST", url, json=body, timeout=httpx.Timeout(5.0, read=3.0)) as response:
        pieces = response.iter_bytes()
        first = next(pieces)  # the head and the first piece go out at once
        assert b"data:" in first
        with pytest.raises(httpx.ReadTimeout):  # the next piece waits its 600 s
            next(pieces)
    fake_openai.chunk_delay = 0.0
    with httpx.stream("POST", url, json=body, timeout=10.0) as response:
        assert b"[DONE]" in response.read()


def test_chunk_delay_holds_an_answer_in_one_piece_as_long_as_its_stream(fake_openai: FakeOpenAIServer) -> None:
    url = f"{fake_openai.base_url}/chat/completions"
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    fake_openai.default = Reply("one two three")
    fake_openai.chunk_delay = 600.0
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url, json=body, timeout=httpx.Timeout(5.0, read=0.2))
