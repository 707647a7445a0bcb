"""Activation gating over a whole config dir: ready, waiting, invalid, skipped, disabled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ishiki_host.errors import ConfigDirError, PluginLoadFailed, PluginNotFound
from ishiki_host.plugins.activation import _how_to_use
from ishiki_host.plugins.configdir import ConfigDir, load_config_dir
from ishiki_host.plugins.discovery import PluginRegistry

WriteConfig = Callable[..., Path]
ProfileFiles = Callable[..., dict[str, str]]


@pytest.fixture
def gate(
    write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str, plugin_registry: PluginRegistry
) -> Callable[..., ConfigDir]:
    """Load a config dir made of ``{profile id: profile.yml text}`` with the echo models."""

    def run(profiles: dict[str, str], models: str | None = None) -> ConfigDir:
        files: dict[str, str] = {"models.yaml": echo_models if models is None else models}
        for pid, text in profiles.items():
            files.update(profile_files(pid, text))
        return load_config_dir(write_config(files), env={}, registry=plugin_registry)

    return run


def states(config: ConfigDir) -> dict[str, str]:
    return {p.id: p.state for p in config.profiles}


CONSOLE = "model: default\nchannels:\n  console:local: ['*']\n"


def test_each_state(gate: Callable[..., ConfigDir]) -> None:
    config = gate(
        {
            "a-ready": CONSOLE,
            "b-waiting": "model: default\nextends:\n  notinstalled: {}\nchannels:\n  matrix:1: ['*']\n",
            "c-invalid": "model: default\nmood: happy\n",
            "d-skipped": "model: default\nchannels:\n  console:local: [private:local]\n",
            "e-disabled": "enable: false\nmodel: 3\n",
        }
    )
    assert states(config) == {
        "a-ready": "ready",
        "b-waiting": "waiting",
        "c-invalid": "invalid",
        "d-skipped": "skipped",
        "e-disabled": "disabled",
    }
    assert not config.ok
    assert [p.id for p in config.ready()] == ["a-ready"]
    waiting = config.profile("b-waiting")
    assert waiting is not None
    assert waiting.missing == ("ishiki.ext.notinstalled", "ishiki.channel.matrix")
    assert [(type(e), e.path, e.line) for e in waiting.errors] == [
        (PluginNotFound, "extends.notinstalled", 3),
        (PluginNotFound, "channels.matrix:1", 5),
    ]
    skipped = config.profile("d-skipped")
    assert skipped is not None
    assert skipped.errors[0].path == "channels.console:local"
    assert "overlap profile 'a-ready' on console:local" in skipped.errors[0].message


def test_all_ready_is_ok(gate: Callable[..., ConfigDir], plugin_registry: PluginRegistry) -> None:
    config = gate({"one": CONSOLE, "two": "model: echo:small\nchannels:\n  testchat:bot: ['*']\n"})
    assert states(config) == {"one": "ready", "two": "ready"}
    assert config.ok
    two = config.profile("two")
    assert two is not None
    assert two.services == (
        "ishiki.engine.context.standard",
        "ishiki.engine.wakeup.standard",
        "ishiki.engine.toolcall.native",
        *(f"ishiki.ext.{name}" for name in plugin_registry.default_extensions()),
        "ishiki.channel.testchat",
        "ishiki.provider.echo",
    )
    assert config.as_dict() == {
        "ok": True,
        "profiles": [
            {"id": "one", "state": "ready", "errors": [], "missing": [], "warnings": []},
            {"id": "two", "state": "ready", "errors": [], "missing": [], "warnings": []},
        ],
        "models": {"errors": []},
        "host": {"errors": []},
        "plugins": {"errors": config.as_dict()["plugins"]["errors"]},
    }


def test_overlap_is_symmetric_and_only_the_later_is_skipped(gate: Callable[..., ConfigDir]) -> None:
    narrow_first = gate({"a": "model: default\nchannels:\n  console:local: [private:local]\n", "b": CONSOLE})
    assert states(narrow_first) == {"a": "ready", "b": "skipped"}
    disjoint = gate(
        {
            "a": "model: default\nchannels:\n  console:local: ['group:*']\n",
            "b": "model: default\nchannels:\n  console:local: ['*', '!group:*']\n",
        }
    )
    assert states(disjoint) == {"a": "ready", "b": "ready"}


def test_waiting_profile_keeps_its_claims(gate: Callable[..., ConfigDir]) -> None:
    config = gate({"a": "model: default\nextends: {absent: {}}\nchannels:\n  console:local: ['*']\n", "b": CONSOLE})
    assert states(config) == {"a": "waiting", "b": "skipped"}


def test_broken_plugin_is_reported_with_its_distribution(gate: Callable[..., ConfigDir]) -> None:
    config = gate({"a": "model: default\nextends:\n  broken: {}\n"})
    state = config.profile("a")
    assert state is not None
    assert state.state == "waiting"
    assert state.missing == ("ishiki.ext.broken",)
    error = state.errors[0]
    assert isinstance(error, PluginLoadFailed)
    assert "ishiki-test-plugins 0.3.1" in error.message
    assert "broken on purpose" in error.message
    assert {e["service"] for e in config.as_dict()["plugins"]["errors"]} >= {"ishiki.ext.broken", "ishiki.ext.missing"}


def test_unknown_engine_gets_a_hint(gate: Callable[..., ConfigDir]) -> None:
    state = gate({"a": "model: default\ncontext: {engine: standrd}\n"}).profile("a")
    assert state is not None
    assert state.state == "waiting"
    assert state.errors[0].message == (
        "needs ishiki.engine.context.standrd, which is not installed "
        "(no entry point 'standrd' in group 'ishiki.engine.context'); did you mean 'standard'?"
    )
    assert state.errors[0].line == 2


def test_requires_must_be_met_in_the_same_profile(gate: Callable[..., ConfigDir]) -> None:
    config = gate(
        {
            "alone": "model: default\ncontext: {engine: needsdecoder}\n",
            "paired": "model: default\ncontext: {engine: needsdecoder}\ntoolcall: {engine: testdecoder}\n",
        }
    )
    assert states(config) == {"alone": "invalid", "paired": "ready"}
    alone = config.profile("alone")
    assert alone is not None
    assert alone.errors[0].message == (
        "ishiki.engine.context.needsdecoder requires ishiki.engine.toolcall.testdecoder in the same profile, "
        "which does not use it (set toolcall.engine: testdecoder)"
    )
    assert alone.errors[0].path == "context.engine"


@pytest.mark.parametrize(
    ("service", "hint"),
    [
        ("ishiki.engine.toolcall.narrative", " (set toolcall.engine: narrative)"),
        ("ishiki.engine.wakeup.jev", " (set wakeup.engine: jev)"),
        ("ishiki.ext.memory", " (enable extends.memory)"),
        ("ishiki.channel.telegram", ""),
    ],
)
def test_an_unmet_requirement_says_which_key_brings_it_in(service: str, hint: str) -> None:
    assert _how_to_use(service) == hint


def test_model_provider_api_is_required(gate: Callable[..., ConfigDir]) -> None:
    models = "providers:\n  far: {api: not-here, models: [{id: m}]}\ngroups:\n  default: {models: ['far:m']}\n"
    state = gate({"a": "model: default\n"}, models=models).profile("a")
    assert state is not None
    assert state.missing == ("ishiki.provider.not-here",)
    assert state.errors[0].path == "model"


def test_missing_models_file_makes_profiles_invalid(
    write_config: WriteConfig, profile_files: ProfileFiles, plugin_registry: PluginRegistry
) -> None:
    config = load_config_dir(write_config(profile_files("a", CONSOLE)), env={}, registry=plugin_registry)
    assert states(config) == {"a": "invalid"}
    assert "not found" in config.models_errors[0].message
    assert not config.ok


def test_broken_directory_skips_only_itself(gate: Callable[..., ConfigDir], write_config: WriteConfig) -> None:
    config = gate({"a": "model: default\n: : :\n", "b": CONSOLE})
    assert states(config) == {"a": "invalid", "b": "ready"}


def test_not_a_config_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigDirError, match="no such directory"):
        load_config_dir(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigDirError, match="not a directory"):
        load_config_dir(tmp_path / "file")
    with pytest.raises(ConfigDirError, match="is not a config directory"):
        load_config_dir(tmp_path)
    (tmp_path / "profiles").write_text("x")
    with pytest.raises(ConfigDirError, match="profiles: not a directory"):
        load_config_dir(tmp_path)


def test_tool_names_two_extensions_declare_make_the_profile_invalid(gate: Callable[..., ConfigDir]) -> None:
    config = gate(
        {
            "clash": "model: default\nextends:\n  notes: {}\n  jotter: {}\n",
            "kernel": "model: default\nextends: {reader: {}}\n",
            "search": "model: default\nextends: {notes: {}}\ntoolsearch: {}\n",
            "fine": "model: default\nextends: {notes: {}, greeter: {config: {greeting: hi}}}\n"
            "codemode: {direct: [x]}\n",
        }
    )
    assert states(config) == {"clash": "invalid", "fine": "ready", "kernel": "invalid", "search": "ready"}
    clash, kernel = config.profile("clash"), config.profile("kernel")
    assert clash is not None
    assert kernel is not None
    assert [(e.path, e.line, e.message) for e in clash.errors] == [
        ("extends.jotter", 4, "extension 'jotter' offers a tool named 'note_add', as extension 'notes' does")
    ]
    assert kernel.errors[0].message == "extension 'reader' offers a tool named 'read', as the host does"


def test_a_direct_or_resident_name_no_declared_tool_has_is_reported(gate: Callable[..., ConfigDir]) -> None:
    text = (
        "model: default\nextends: {notes: {}}\ncodemode:\n  direct: [note_ad, send_message]\n"
        "toolsearch: {resident: [jot]}\n"
    )
    config = gate({"typo": text})
    typo = config.profile("typo")
    assert typo is not None
    assert typo.state == "invalid"
    assert [(e.path, e.message) for e in typo.errors] == [
        ("codemode.direct[0]", "no tool is named 'note_ad'; did you mean 'note_add'?"),
        ("toolsearch.resident[0]", "no tool is named 'jot'"),
    ]


def test_what_the_declarations_cannot_show_is_a_warning(gate: Callable[..., ConfigDir]) -> None:
    greeter = "greeter: {config: {greeting: hi}}"
    config = gate(
        {
            "direct": f"model: default\nextends: {{notes: {{}}, {greeter}}}\ncodemode: {{direct: [note_ad, x]}}\n",
            "two": f"model: default\nextends: {{{greeter}, sticky: {{}}}}\n",
            "one": f"model: default\nextends: {{notes: {{}}, {greeter}}}\n",
        }
    )
    assert states(config) == {"direct": "ready", "one": "ready", "two": "ready"}  # warnings never change a state
    direct, two, one = config.profile("direct"), config.profile("two"), config.profile("one")
    assert direct is not None
    assert two is not None
    assert one is not None
    why = "extension 'greeter' declares no tool names (tool_names), so only a turn will tell"
    assert [(w.path, w.message) for w in direct.warnings] == [
        ("codemode.direct[0]", f"no declared tool is named 'note_ad'; did you mean 'note_add'?; {why}"),
        ("codemode.direct[1]", f"no declared tool is named 'x'; {why}"),
    ]
    assert [(w.path, w.message) for w in two.warnings] == [
        ("extends.greeter", "extension 'greeter' declares no tool names (tool_names), nor does 'sticky': a clash "
         "among their tools shows only when a turn runs"),
        ("extends.sticky", "extension 'sticky' declares no tool names (tool_names), nor does 'greeter': a clash "
         "among their tools shows only when a turn runs"),
    ]  # fmt: skip
    assert one.warnings == ()  # one undeclared extension, no names to check: nothing the check could say
    assert direct.as_dict()["warnings"][0]["path"] == "codemode.direct[0]"


def test_a_profile_claiming_a_platform_whose_account_is_invalid_waits_with_the_reason(
    write_config: WriteConfig, profile_files: ProfileFiles, echo_models: str, plugin_registry: PluginRegistry
) -> None:
    host = "channels:\n  testchat:\n    accounts:\n      - token: ${CHAT_TOKEN}\n"
    root = write_config(
        {
            "models.yaml": echo_models,
            "ishiki.yaml": host,
            **profile_files("chat", "model: default\nchannels:\n  testchat:bot: ['*']\n"),
            **profile_files("desk", CONSOLE),
        }
    )
    config = load_config_dir(root, env={}, registry=plugin_registry)
    assert states(config) == {"chat": "waiting", "desk": "ready"}
    chat = config.profile("chat")
    assert chat is not None
    assert chat.missing == ("channels.testchat.accounts[0] (invalid in ishiki.yaml)",)
    (reason,) = chat.errors
    assert reason.describe() == (
        f"{root}/ishiki.yaml:4: channels.testchat.accounts[0].token: environment variable CHAT_TOKEN is not set "
        "(write ${CHAT_TOKEN:-default} to give a default)"
    )
    assert config.ready() == (config.profile("desk").profile,)  # type: ignore[union-attr]

    fixed = load_config_dir(root, env={"CHAT_TOKEN": "t0k"}, registry=plugin_registry)
    assert states(fixed) == {"chat": "ready", "desk": "ready"}
