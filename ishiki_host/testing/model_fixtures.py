"""Fixtures for model calls: loopback fake model servers, the built-in provider APIs, the network guard.

``fake_openai`` / ``fake_anthropic``
    A started ``FakeOpenAIServer`` / ``FakeAnthropicServer`` (closed after the test). Script answers with
    ``reply``, ``tool_call``, ``rate_limit``, ``server_error``, ``hang``, ``malformed``, ``cut``,
    ``context_length``, ``error_object``, ``push``; read ``requests`` / ``last_request`` / ``bodies``;
    ``provider(...)`` gives the ``ProviderConfig`` that points at it.
``model_apis``
    The built-in provider APIs by name (``openai-completions``, ``anthropic-messages``, ``scripted``), the
    registry a ``Gateway`` takes.
``_ishiki_network_guard`` (autouse, opt-in)
    Where the guard is on, every httpx request to a non-loopback host raises ``NetworkGuardError`` and fails
    the test. It is on for a test marked ``@pytest.mark.ishiki_network_guard`` and for every test of a session
    whose configuration says ``ishiki_network_guard = true``; off otherwise (see ``network_guard``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.providers.anthropic import AnthropicMessagesAPI
from ishiki_host.gateway.providers.openai import OpenAICompletionsAPI
from ishiki_host.gateway.providers.scripted import ScriptedAPI
from ishiki_host.testing.fake_anthropic import FakeAnthropicServer
from ishiki_host.testing.fake_openai import FakeOpenAIServer
from ishiki_host.testing.network_guard import guard_wanted, guarded_transports


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A loopback OpenAI Chat Completions server; ``fake_openai.base_url`` is its ``base_url``."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicServer]:
    """A loopback Anthropic Messages server; ``fake_anthropic.base_url`` is its ``base_url``."""
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def model_apis() -> dict[str, ModelAPI]:
    """The built-in provider APIs, keyed by their ``ishiki.provider`` entry-point names."""
    return {
        "openai-completions": OpenAICompletionsAPI(),
        "anthropic-messages": AnthropicMessagesAPI(),
        "scripted": ScriptedAPI(),
    }


@pytest.fixture(autouse=True)
def _ishiki_network_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Where the guard is on (``guard_wanted``), no test reaches beyond 127.0.0.1 through httpx."""
    if not guard_wanted(request.config, request.node):
        yield
        return
    violations: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        for cls, name, replacement in guarded_transports(violations):
            patch.setattr(cls, name, replacement)
        yield
    if violations:
        pytest.fail(f"the test tried to reach non-loopback hosts: {', '.join(violations)}", pytrace=False)
