"""The Gateway's face: refs, shared objects, call records, status, probes, the models report, closing."""

from __future__ import annotations

from importlib.metadata import entry_points

import httpx
import pytest

from ishiki_host.config.models import GroupConfig, ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import LanguageModel, ModelRequest
from ishiki_host.errors import ModelError, ModelsConfigInvalid
from ishiki_host.gateway import FailoverPolicy, Gateway, ModelCallRecord, models_report
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.testing import FakeAnthropicServer, FakeOpenAIServer

pytestmark = pytest.mark.anyio

ASK = ModelRequest((Message.user("hi"),), priority="background")


def config_for(openai: FakeOpenAIServer, anthropic: FakeAnthropicServer) -> ModelsConfig:
    return ModelsConfig(
        providers={
            "local": openai.provider("local", (ModelSpec("llama", context_window=8192),)),
            "claude": anthropic.provider("claude", (ModelSpec("sonnet", input=("text", "image")),)),
        },
        groups={"default": GroupConfig("default", ("local:llama", "claude:sonnet"), strategy="round-robin", seed=3)},
        file="/cfg/models.yaml",
    )


async def test_entry_points_are_registered() -> None:
    found = {ep.name: ep.load() for ep in entry_points(group="ishiki.provider")}
    assert {"openai-completions", "anthropic-messages", "scripted"} <= set(found)
    assert all(issubclass(cls, ModelAPI) for cls in found.values())


async def test_model_objects_are_shared_and_named(
    fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, model_apis: dict[str, ModelAPI]
) -> None:
    async with Gateway(config_for(fake_openai, fake_anthropic), model_apis, clock=FakeClock()) as gateway:
        model = gateway.model("default")
        assert isinstance(model, LanguageModel)
        assert model.name == "default"
        assert model.members == ("local:llama", "claude:sonnet")
        assert gateway.model("default") is model
        assert gateway.model("default", failover=FailoverPolicy()) is model
        assert gateway.model("default", failover=FailoverPolicy(attempts=1)) is not model
        assert gateway.model("local:llama").name == "local:llama"
        assert gateway.spec("local:llama").context_window == 8192  # type: ignore[union-attr]
        # round-robin alternates members across calls
        answered = [(await model.generate(ASK)).model for _ in range(3)]
        assert answered == ["local:llama", "claude:sonnet", "local:llama"]


async def test_unknown_refs_suggest_names(
    fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, model_apis: dict[str, ModelAPI]
) -> None:
    async with Gateway(config_for(fake_openai, fake_anthropic), model_apis) as gateway:
        with pytest.raises(ModelsConfigInvalid) as info:
            gateway.model("defualt")
        assert "did you mean 'default'" in str(info.value)
        assert info.value.file == "/cfg/models.yaml"
        with pytest.raises(ModelsConfigInvalid):
            gateway.model("local:gpt-9")


async def test_group_member_without_provider_is_a_config_error(model_apis: dict[str, ModelAPI]) -> None:
    config = ModelsConfig(groups={"g": GroupConfig("g", ("ghost:model",))}, file="models.yaml")
    with pytest.raises(ModelsConfigInvalid) as info:
        Gateway(config, model_apis)
    assert info.value.path == "groups.g.members"


async def test_call_records_for_the_fact_log(
    fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, model_apis: dict[str, ModelAPI]
) -> None:
    records: list[ModelCallRecord] = []
    async with Gateway(config_for(fake_openai, fake_anthropic), model_apis, clock=FakeClock()) as gateway:
        remove = gateway.add_listener(records.append)
        gateway.add_listener(lambda record: 1 / 0)  # a broken listener is logged, never fatal
        fake_openai.reply("x", usage=(11, 2))
        result = await gateway.model("local:llama").generate(ASK)
        [event async for event in gateway.model("local:llama").stream(ASK)]
        remove()
        await gateway.model("local:llama").generate(ASK)
        status = gateway.status()
    assert len(records) == 2
    first, second = records
    assert first.to_dict() == {
        "ref": "local:llama",
        "member": "local:llama",
        "priority": "background",
        "stream": False,
        "latency_seconds": 0.0,
        "usage": {"input_tokens": 11, "output_tokens": 2, "estimated": False},
        "error_kind": None,
    }
    assert result.usage == first.usage
    assert second.stream
    assert status["providers"]["local"]["calls"] == 3
    assert status["providers"]["local"]["tokens"] == {"input": 31, "output": 12}


async def test_missing_api_and_base_url_make_members_unavailable(model_apis: dict[str, ModelAPI]) -> None:
    config = ModelsConfig(
        providers={
            "x": ProviderConfig("x", "grpc-thing", base_url="http://127.0.0.1:9", models=(ModelSpec("m"),)),
            "y": ProviderConfig("y", "openai-completions", models=(ModelSpec("m"),)),
        }
    )
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        status = gateway.status()["providers"]
        assert "'grpc-thing' is not installed" in status["x"]["error"]
        assert "needs a base_url" in status["y"]["error"]
        with pytest.raises(ModelError) as info:
            await gateway.model("x:m", failover=FailoverPolicy(attempts=1)).generate(ASK)
        assert info.value.kind == "unavailable"


async def test_probe_and_report(
    fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, model_apis: dict[str, ModelAPI]
) -> None:
    config = config_for(fake_openai, fake_anthropic)
    fake_anthropic.error(401, "invalid x-api-key", type="authentication_error")
    async with Gateway(config, model_apis) as gateway:
        report = await models_report(config, gateway, probe=True)
        assert fake_openai.last_request.json["messages"] == [
            {"role": "user", "content": "Reply with the single word OK."}
        ]
        # a probe is not a verdict on the breaker
        assert gateway.status()["members"]["claude:sonnet"]["failures"] == 0
    models = {m["ref"]: m for m in report["models"]}
    assert models["local:llama"]["probe"]["ok"] is True
    assert models["local:llama"]["probe"]["latency_seconds"] >= 0
    assert models["claude:sonnet"]["probe"] == {
        "ok": False,
        "latency_seconds": None,
        "error_kind": "auth",
        "error": "HTTP 401: invalid x-api-key",
        "url": fake_anthropic.base_url,  # where it went: the first thing to check when a probe fails
    }
    assert models["local:llama"]["breaker"]["state"] == "closed"
    assert models["local:llama"]["groups"] == ["default"]
    assert report["groups"] == [
        {
            "name": "default",
            "strategy": "round-robin",
            "members": ["local:llama", "claude:sonnet"],
            "circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 60.0},
            "seed": 3,
        }
    ]
    assert report["providers"][0]["id"] == "local"
    assert report["file"] == "/cfg/models.yaml"


async def test_report_without_gateway(fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer) -> None:
    config = config_for(fake_openai, fake_anthropic)
    report = await models_report(config, None, probe=False)
    assert "breaker" not in report["models"][0]
    assert "error" not in report["providers"][0]
    with pytest.raises(ValueError, match="needs a gateway"):
        await models_report(config, None, probe=True)


async def test_aclose_closes_the_http_clients(
    fake_openai: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer, model_apis: dict[str, ModelAPI]
) -> None:
    gateway = Gateway(config_for(fake_openai, fake_anthropic), model_apis)
    await gateway.model("local:llama").generate(ASK)
    await gateway.aclose()
    with pytest.raises(ModelError):
        await gateway.model("local:llama", failover=FailoverPolicy(attempts=1)).generate(ASK)


async def test_mock_transport_for_unit_tests(model_apis: dict[str, ModelAPI]) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{"message": {"content": "mocked"}, "finish_reason": "stop"}]})

    config = ModelsConfig(
        providers={"p": ProviderConfig("p", "openai-completions", "http://api.invalid/v1", models=(ModelSpec("m"),))}
    )
    async with Gateway(config, model_apis, transport=httpx.MockTransport(answer)) as gateway:
        assert (await gateway.model("p:m").generate(ASK)).text == "mocked"


async def test_empty_group_is_a_config_error(model_apis: dict[str, ModelAPI]) -> None:
    async with Gateway(ModelsConfig(groups={"g": GroupConfig("g", ())}), model_apis) as gateway:
        with pytest.raises(ModelsConfigInvalid, match="no members"):
            gateway.model("g")
