"""The fake model servers can answer slowly, like a model that takes its time (for load benchmarks)."""

from __future__ import annotations

import httpx
import pytest

from ishiki_host.testing import FakeOpenAIServer


def test_latency_delays_every_answer_and_zero_answers_at_once(fake_openai: FakeOpenAIServer) -> None:
    url = f"{fake_openai.base_url}/chat/completions"
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    fake_openai.latency = 30.0
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url, json=body, timeout=httpx.Timeout(5.0, read=0.2))
    fake_openai.latency = 0.0
    answer = httpx.post(url, json=body, timeout=10.0)
    assert answer.json()["choices"][0]["message"]["content"] == "ok"
