"""Loading one profile: schema with plugin schemas, hints, lines, defaults, and every kind of bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ishiki_host.config.models_loader import load_models
from ishiki_host.config.profile import ProfileLoad, load_profile
from ishiki_host.config.profile_types import (
    CodemodeConfig,
    EngineChoice,
    FailoverConfig,
    Profile,
    ResourcesConfig,
    SessionConfig,
    ToolsearchConfig,
    TrustConfig,
    TypingConfig,
)
from ishiki_host.plugins.discovery import PluginRegistry, discover

WriteConfig = Callable[..., Path]
ProfileFiles = Callable[..., dict[str, str]]


@pytest.fixture
def load(
    write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str, plugin_registry: PluginRegistry
) -> Callable[..., ProfileLoad]:
    """Load ``profiles/p`` of a fresh config dir whose profile.yml is the given text."""

    def run(
        text: str, persona: str | None = "You are P.\n", extra: dict[str, str | bytes] | None = None
    ) -> ProfileLoad:
        files: dict[str, str | bytes] = {"models.yaml": echo_models, **profile_files("p", text, persona or "")}
        if persona is None:
            del files["profiles/p/persona.md"]
        root = write_config({**files, **(extra or {})})
        models, _ = load_models(root, {}, catalog=plugin_registry)
        return load_profile(root / "profiles" / "p", "profiles/p", plugin_registry, models)

    return run


def messages(result: ProfileLoad) -> list[tuple[int | None, str, str]]:
    return [(e.line, e.path, e.message) for e in result.errors]


def test_minimal_profile_gets_every_default(load: Callable[..., ProfileLoad], plugin_registry: PluginRegistry) -> None:
    result = load("model: default\n")
    assert result.errors == ()
    profile = result.profile
    assert profile is not None
    assert profile.persona == "You are P.\n"
    context_defaults = {
        "budget_ratio": 0.75,
        "refill_ratio": 0.5,
        "summarize": True,
        "summary_model": None,
        "summary_max_tokens": 1024,
        "summary_timeout_seconds": 120,
        "timezone": None,
    }
    assert profile.context == EngineChoice("context", "standard", context_defaults)
    assert profile.wakeup == EngineChoice(
        "wakeup", "standard", {"keywords": [], "direct": True, "mention": True, "quote": True}
    )
    assert profile.toolcall == EngineChoice("toolcall", "native", {})
    assert profile.context.service == "ishiki.engine.context.standard"
    # the dataclass defaults repeat the schema's
    by_hand = Profile(
        id="p",
        directory=profile.directory,
        file=profile.file,
        persona=profile.persona,
        model="default",
        context=profile.context,
        wakeup=profile.wakeup,
        extends=profile.extends,
        document=profile.document,
    )
    assert profile == by_hand
    # the built-in extensions that are on by default (heartbeat...), with their schema defaults
    assert [e.name for e in profile.extends] == list(plugin_registry.default_extensions())
    assert "heartbeat" in plugin_registry.default_extensions()
    assert profile.document["session"] == {"summarizer": "auto", "compact_threshold": 0.9}


def test_every_section(load: Callable[..., ProfileLoad], plugin_registry: PluginRegistry) -> None:
    text = """\
model: echo:small
mode: cross
channels:
  console:local: ["*"]
  testchat:bot: ["group:*", "!group:13"]
extends:
  greeter: {config: {greeting: hi, times: 2}}
  workspace: {enable: false, config: {anything: goes}}
context: {engine: testctx, testctx: {window: 3}}
failover: {attempts: 2, backoff_ms: 100, failover_on: any}
codemode: {timeout_ms: 500, direct: [send_message]}
toolsearch:
typing: {enable: false}
resources: {artifact_threshold_chars: 100, max_asset_bytes: 0}
trust: {owners: ["testchat:1"], trusted: ["testchat:2"], allow_unlisted: false, commands: {clear: untrusted}}
session: {summarizer: manual, compact_threshold: 0.5}
reply_with_text: false
max_steps: 3
"""
    profile = load(text).profile
    assert profile is not None
    assert profile.mode == "cross"
    assert profile.claims.matches("testchat:bot", "group:1")
    assert not profile.claims.matches("testchat:bot", "group:13")
    defaults = set(plugin_registry.default_extensions())
    named = [(e.name, e.config) for e in profile.extends if e.name not in defaults]
    assert named == [("greeter", {"greeting": "hi", "times": 2})]
    assert profile.context == EngineChoice("context", "testctx", {"window": 3})
    assert profile.failover == FailoverConfig(2, 100, "any")
    assert profile.codemode == CodemodeConfig(timeout_ms=500, direct=("send_message",))
    assert profile.toolsearch == ToolsearchConfig()
    assert profile.typing is None
    assert profile.resources == ResourcesConfig(100, 0)
    assert profile.trust == TrustConfig(("testchat:1",), ("testchat:2",), False, {"clear": "untrusted"})
    assert profile.session == SessionConfig("manual", 0.5)
    assert (profile.reply_with_text, profile.max_steps) == (False, 3)
    assert load("model: default\ntyping:\n").profile.typing == TypingConfig()  # type: ignore[union-attr]


def test_unknown_keys_get_a_hint_and_a_line(load: Callable[..., ProfileLoad]) -> None:
    result = load("model: default\nmdoe: channel\nsession:\n  sumarizer: auto\n")
    assert messages(result) == [
        (2, "mdoe", "unknown key 'mdoe'; did you mean 'mode'?"),
        (4, "session.sumarizer", "unknown key 'sumarizer'; did you mean 'summarizer'?"),
    ]
    assert result.profile is None


def test_wrong_types_everywhere(load: Callable[..., ProfileLoad]) -> None:
    text = """\
model: 3
mode: chanel
channels: [console:local]
extends: {greeter: yes}
context: standard
max_steps: 0
reply_with_text: "no"
trust: {owners: [nobody]}
"""
    assert messages(load(text)) == [
        (1, "model", "expected a string, got integer (3)"),
        (2, "mode", "must be one of 'channel', 'cross'; got 'chanel'; did you mean 'channel'?"),
        (3, "channels", "expected an object, got array"),
        (4, "extends.greeter", "expected an object, got boolean"),
        (5, "context", "expected an object, got string ('standard')"),
        (6, "max_steps", "must be >= 1; got 0"),
        (7, "reply_with_text", "expected a boolean, got string ('no')"),
        (8, "trust.owners[0]", "must be platform:userId"),
    ]


def test_plugin_blocks_are_checked_by_the_plugin_schema(load: Callable[..., ProfileLoad]) -> None:
    text = """\
model: default
extends:
  greeter: {config: {times: 0}}
context:
  standard: {refill_ratio: 2, budgetRate: 1}
  testctx: {window: 3}
wakeup:
  engine: standard
  standard: {keywords: hello}
"""
    assert messages(load(text)) == [
        (3, "extends.greeter.config", "missing required key 'greeting'"),
        (3, "extends.greeter.config.times", "must be >= 1; got 0"),
        (5, "context.standard.budgetRate", "unknown key 'budgetRate'; did you mean 'budget_ratio'?"),
        (5, "context.standard.refill_ratio", "must be <= 1; got 2"),
        (6, "context.testctx", "options for engine 'testctx', but context.engine is 'standard'"),
        (9, "wakeup.standard.keywords", "expected an array, got string ('hello')"),
    ]


def test_disabled_extension_is_dropped_before_anything_else(
    load: Callable[..., ProfileLoad], plugin_registry: PluginRegistry
) -> None:
    result = load("model: default\nextends:\n  notinstalled: {enable: false, config: [1, 2]}\n  sticky:\n")
    assert result.errors == ()
    assert result.profile is not None
    defaults = set(plugin_registry.default_extensions())
    assert [e.name for e in result.profile.extends if e.name not in defaults] == ["sticky"]


def test_the_built_in_extensions_are_turned_off_and_configured_like_any_other(
    load: Callable[..., ProfileLoad],
) -> None:
    off = load("model: default\nextends:\n  memory: {enable: false}\n  skills: {enable: false}\n")
    assert off.errors == ()
    assert off.profile is not None
    assert "memory" not in {e.name for e in off.profile.extends}
    assert "skills" not in {e.name for e in off.profile.extends}
    chosen = load(
        "model: default\nextends:\n  skills: {config: {enabled: [brew-tea]}}\n  memory: {config: {limit: 5}}\n"
    )
    assert chosen.profile is not None
    configs = {e.name: e.config for e in chosen.profile.extends if e.name in ("memory", "skills")}
    assert list(configs) == ["skills", "memory"]
    assert configs["skills"] == {"enabled": ["brew-tea"]}
    # the memory extension's schema fills its defaults (tools off, no people profiles) beside what was given
    assert configs["memory"] == {"limit": 5, "people": False, "tools": "off"}
    wrong = load("model: default\nextends:\n  memory: {config: {limt: 5}}\n  skills: {config: {enabled: all}}\n")
    assert messages(wrong) == [
        (3, "extends.memory.config.limt", "unknown key 'limt'; did you mean 'limit'?"),
        (4, "extends.skills.config.enabled", 'must be "*" (every skill) or a list of skill names'),
    ]


def test_summarizer_off_is_the_mode_off_though_yaml_reads_it_as_false(load: Callable[..., ProfileLoad]) -> None:
    result = load("model: default\nsession:\n  summarizer: off\n")
    assert result.errors == ()
    assert result.profile is not None
    assert result.profile.session.summarizer == "off"


def test_disabled_profile_is_not_checked(load: Callable[..., ProfileLoad]) -> None:
    result = load("enable: false\nmodel: 3\nwhatever: [\n  1]\n", persona=None)
    assert result.disabled
    assert result.errors == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected a mapping of profile keys (at least 'model:'), got an empty file"),
        ("- model: default\n", "expected a mapping of profile keys (at least 'model:'), got a list"),
        ("just text\n", "expected a mapping of profile keys (at least 'model:'), got a str"),
        ("mode: channel\n", "missing required key 'model'"),
        ("model: nope\n", "'nope' names no group and no provider:modelId of"),
        ("model: defualt\n", "did you mean 'default'?"),
        ("model: default\nchannels:\n  console: ['*']\n", "'console' must be platform:selfId"),
    ],
)
def test_profile_errors(load: Callable[..., ProfileLoad], text: str, message: str) -> None:
    result = load(text)
    assert result.profile is None
    assert any(message in e.message for e in result.errors), messages(result)
    assert all(e.file == "profiles/p/profile.yml" for e in result.errors)


def test_missing_persona_and_profile_files(load: Callable[..., ProfileLoad], write_config: WriteConfig) -> None:
    result = load("model: default\n", persona=None)
    assert [(e.file, e.message) for e in result.errors] == [
        ("profiles/p/persona.md", "not found: write the persona's prompt in persona.md beside the profile")
    ]
    root = write_config({"profiles/q/profile.yml": "model: a\n", "profiles/q/profile.yaml": "model: b\n"})
    assert "keep one" in load_profile(root / "profiles/q", "profiles/q", discover()).errors[0].message
    (root / "profiles" / "empty").mkdir()
    assert "no profile.yml" in load_profile(root / "profiles/empty", "profiles/empty").errors[0].message


def test_yaml_extension_is_accepted(write_config: WriteConfig) -> None:
    root = write_config({"profiles/y/profile.yaml": "model: a:b\n", "profiles/y/persona.md": "hi"})
    result = load_profile(root / "profiles/y", "profiles/y")
    assert result.errors == ()
    assert result.file == "profiles/y/profile.yaml"


def test_binary_persona(load: Callable[..., ProfileLoad]) -> None:
    result = load("model: default\n", extra={"profiles/p/persona.md": b"\x00\x01\x02"})
    assert [e.message for e in result.errors] == ["binary file (contains NUL bytes), expected UTF-8 text"]


def test_a_command_level_must_be_a_level_and_a_name_a_command_name(load: Callable[..., ProfileLoad]) -> None:
    result = load("model: default\ntrust:\n  commands: {clear: admin, /compact: owner}\n")
    found = messages(result)
    assert result.profile is None
    assert any(key == "trust.commands.clear" and "admin" in message for _, key, message in found), found
    assert any("must be a command name without the slash" in message for _, _, message in found), found
