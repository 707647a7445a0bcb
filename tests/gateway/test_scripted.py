"""The scripted provider: rules from a file or inline, first match wins, tools then reply, bad rules named."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ishiki_host.config.models import ModelsConfig, ModelSpec, ProviderConfig
from ishiki_host.config.models_loader import load_models
from ishiki_host.core.clock import FakeClock
from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest, StreamDone, TextDelta, ToolCallDelta
from ishiki_host.errors import ModelsConfigInvalid
from ishiki_host.gateway import Gateway
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.providers.scripted import ScriptedAPI, ScriptedClient, load_rules
from ishiki_host.plugins.discovery import PluginRegistry

pytestmark = pytest.mark.anyio

DEMO = ModelSpec("demo")
RULES = """
rules:
  - match: weather
    tool_calls:
      - {name: read, arguments: {url: "local://forecast.txt"}}
    reply: Sunny all week.
  - regex: '(?i)^hi\\b'
    reply: Hello!
  - match: broken
    tool_calls: [{name: read, arguments: "{"}]
  - match: slow
    reply: finally
    delay_ms: 5000
  - reply: I only know the weather.
"""


def scripted(rules: object, **options: object) -> ScriptedClient:
    provider = ProviderConfig("demo", "scripted", models=(DEMO,), options={"rules": rules, **options})
    return ScriptedAPI().create(provider, None)  # type: ignore[arg-type]


def user(text: str) -> ModelRequest:
    return ModelRequest((Message.system("persona"), Message.user(text)))


async def test_rules_file_relative_to_the_config_dir(tmp_path: Path, model_apis: dict[str, ModelAPI]) -> None:
    (tmp_path / "demo.rules.yaml").write_text(RULES)
    provider = ProviderConfig("demo", "scripted", models=(DEMO,), options={"rules": "demo.rules.yaml"})
    config = ModelsConfig(providers={"demo": provider}, file=str(tmp_path / "models.yaml"))
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        result = await gateway.model("demo:demo").generate(user("Hi there"))
    assert result.text == "Hello!"
    assert result.model == "demo:demo"
    assert result.usage.estimated


async def test_first_match_wins_and_the_default() -> None:
    client = scripted([{"match": "a", "reply": "first"}, {"match": "a", "reply": "second"}, {"reply": "default"}])
    assert (await client.generate(DEMO, user("A cat"))).text == "first"
    assert (await client.generate(DEMO, user("dog"))).text == "default"
    bare = scripted([{"match": "zzz", "reply": "never"}], default="Nothing scripted.")
    assert (await bare.generate(DEMO, user("dog"))).text == "Nothing scripted."


async def test_tool_calls_then_reply_never_loops(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RULES)
    client = scripted(str(tmp_path / "r.yaml"))
    first = await client.generate(DEMO, user("What's the weather?"))
    assert first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert (call.id, call.name, dict(call.arguments)) == ("scripted-1-0", "read", {"url": "local://forecast.txt"})
    follow_up = ModelRequest((*user("What's the weather?").messages, first.message(), Message.tool(call, "sun")))
    second = await client.generate(DEMO, follow_up)
    assert (second.text, second.tool_calls, second.finish_reason) == ("Sunny all week.", (), "stop")


async def test_deterministic_ids_and_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RULES)
    runs = []
    for _ in range(2):
        client = scripted(str(tmp_path / "r.yaml"))
        answers = [await client.generate(DEMO, user(text)) for text in ("hi", "broken")]
        runs.append(answers)
    assert runs[0] == runs[1]
    (broken,) = runs[0][1].tool_calls
    assert broken.id == "scripted-2-0"
    assert broken.parse_error is not None


async def test_stream_gives_words_and_calls(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RULES)
    client = scripted(str(tmp_path / "r.yaml"))
    events = [e async for e in client.stream(DEMO, user("tell me something"))]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "I only know the weather."
    assert len([e for e in events if isinstance(e, TextDelta)]) == 5
    events = [e async for e in client.stream(DEMO, user("weather"))]
    assert [type(e) for e in events] == [ToolCallDelta, StreamDone]


async def test_a_streamed_answer_pauses_between_words_when_asked() -> None:
    client = scripted([{"reply": "one two three"}], word_delay_ms=40)
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)

    client.sleep = sleep
    events = [e async for e in client.stream(DEMO, user("count"))]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one ", "two ", "three"]
    assert pauses == [0.04, 0.04]  # between the words, never before the first
    assert isinstance(events[-1], StreamDone)
    assert events[-1].result.text == "one two three"
    pauses.clear()
    assert (await client.generate(DEMO, user("count"))).text == "one two three"
    assert pauses == []  # a whole answer does not pause


@pytest.mark.parametrize("bad", ["-1", "fast", "10001"])
def test_a_bad_word_delay_is_named(tmp_path: Path, plugin_registry: PluginRegistry, bad: str) -> None:
    text = f"providers:\n  s: {{api: scripted, rules: [], word_delay_ms: {bad}, models: [{{id: m}}]}}\n"
    (tmp_path / "models.yaml").write_text(text)
    _, errors = load_models(tmp_path, {}, catalog=plugin_registry)
    assert [str(error.path) for error in errors] == ["providers.s.word_delay_ms"]


async def test_delay_counts_against_the_call_deadline(tmp_path: Path, model_apis: dict[str, ModelAPI]) -> None:
    (tmp_path / "r.yaml").write_text(RULES)
    provider = ProviderConfig("demo", "scripted", models=(DEMO,), options={"rules": "r.yaml"}, timeout_seconds=0.05)
    config = ModelsConfig(providers={"demo": provider}, file=str(tmp_path / "models.yaml"))
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        from ishiki_host.gateway import FailoverPolicy

        with anyio.fail_after(5):
            with pytest.raises(Exception) as info:
                await gateway.model("demo:demo", failover=FailoverPolicy(attempts=1)).generate(user("slow please"))
    assert getattr(info.value, "kind", None) == "unavailable"


@pytest.mark.parametrize(
    ("rules", "path", "message"),
    [
        ([{"match": 3}], "providers.demo.rules[0].match", "must be a string"),
        ([{"regex": "("}], "providers.demo.rules[0].regex", "invalid regular expression"),
        ([{"reply": "x", "colour": "red"}], "providers.demo.rules[0].colour", "unknown key 'colour'"),
        ([{"tool_calls": [{"arguments": {}}]}], "providers.demo.rules[0].tool_calls[0]", "needs a string 'name'"),
        ([{"delay_ms": -1}], "providers.demo.rules[0].delay_ms", "non-negative"),
        ({"not": "a list"}, "providers.demo.rules", "must be a list"),
        ("missing.yaml", "", "cannot read: No such file or directory"),
    ],
)
async def test_bad_rules_are_named(rules: object, path: str, message: str) -> None:
    with pytest.raises(ModelsConfigInvalid) as info:
        scripted(rules)
    assert info.value.path == path
    assert message in info.value.message


async def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - match: [unclosed\n")
    with pytest.raises(ModelsConfigInvalid) as info:
        load_rules(str(bad), None)
    assert info.value.file == str(bad)
    assert info.value.line is not None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"rules:\n  - reply: caf\xe9\n", "2: not UTF-8 text (byte 0xe9 at offset 21)"),
        (b"rules: " + b"[" * 600 + b"]" * 600 + b"\n", "1: nested deeper than 64 levels"),
        (b"rules:\n  - delay_ms: " + b"9" * 5000 + b"\n", "2: rules[0].delay_ms: an integer of 5,000 characters"),
        (b"a: &a [x, x]\nrules: [*b]\n", "2: unknown alias '*b'"),
        (b"rules: []\nrules: []\n", "2: rules: duplicate key 'rules' (first at line 1)"),
    ],
)
async def test_a_hostile_rules_file_is_a_models_error_for_run_models_and_check(
    tmp_path: Path, model_apis: dict[str, ModelAPI], content: bytes, message: str
) -> None:
    (tmp_path / "rules.yaml").write_bytes(content)
    provider = ProviderConfig("demo", "scripted", models=(DEMO,), options={"rules": "rules.yaml"})
    (problem,) = ScriptedAPI().check(provider, tmp_path)  # what `ishiki check` reports
    assert isinstance(problem, ModelsConfigInvalid)
    assert problem.describe().startswith(f"{tmp_path / 'rules.yaml'}:{message}")
    config = ModelsConfig(providers={"demo": provider}, file=str(tmp_path / "models.yaml"))
    async with Gateway(config, model_apis, clock=FakeClock(), config_dir=tmp_path) as gateway:  # `run`, `models`
        assert message in gateway.status()["providers"]["demo"]["error"]


async def test_good_rules_check_clean(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(RULES, encoding="utf-8")
    provider = ProviderConfig("demo", "scripted", models=(DEMO,), options={"rules": "rules.yaml"})
    assert ScriptedAPI().check(provider, tmp_path) == []


async def test_a_broken_rules_file_leaves_the_provider_unusable_not_the_gateway(
    tmp_path: Path, model_apis: dict[str, ModelAPI]
) -> None:
    provider = ProviderConfig("demo", "scripted", models=(DEMO,), options={"rules": [{"regex": "("}]})
    config = ModelsConfig(providers={"demo": provider}, file=str(tmp_path / "models.yaml"))
    async with Gateway(config, model_apis, clock=FakeClock()) as gateway:
        error = gateway.status()["providers"]["demo"]["error"]
        assert "models.yaml" in error
        assert "invalid regular expression" in error
        from ishiki_host.gateway import FailoverPolicy

        with pytest.raises(Exception) as info:
            await gateway.model("demo:demo", failover=FailoverPolicy(attempts=1)).generate(user("x"))
        assert getattr(info.value, "kind", None) == "unavailable"
