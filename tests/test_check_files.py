"""``ishiki check`` reads every file the host reads: skills, heartbeats.json, and the files plugins read
themselves through ``ModelAPI.check`` / ``Extension.check`` (``ishiki_host.plugins.checks``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ishiki_host import CheckContext, Extension, PluginConfig
from ishiki_host.errors import ConfigError, PluginLoadFailed, ProfileInvalid
from ishiki_host.plugins.checks import plugin_checks
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.plugins.discovery import PluginRegistry, ServiceRecord, discover

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
WriteConfig = Callable[..., Path]

MODELS = "providers:\n  demo:\n    api: scripted\n    rules: demo.rules.yaml\n    models: [{id: demo}]\n"
PROFILE = "model: demo:demo\nchannels:\n  console:local: ['*']\n"
DEEP = "[" * 600 + "]" * 600


def files(**extra: str | bytes) -> dict[str, str | bytes]:
    return {
        "models.yaml": MODELS,
        "demo.rules.yaml": "rules:\n  - reply: Hello.\n",
        "profiles/ana/profile.yml": PROFILE,
        "profiles/ana/persona.md": "You are a test.\n",
        "skills/tea/SKILL.md": "---\nname: tea\ndescription: Brew tea.\n---\nBody\n",
        **extra,
    }


def test_check_reports_each_hostile_file_by_name_and_always_prints_json(
    run_ishiki: RunIshiki, write_config: WriteConfig
) -> None:
    root = write_config(files())
    clean = run_ishiki("check", str(root), "--json")
    assert clean.returncode == 0, clean.stdout
    assert json.loads(clean.stdout)["skills"] == {"skills": 1, "errors": []}

    hostile = {
        "demo.rules.yaml": b"rules:\n  - reply: caf\xe9\n",
        "skills/deep/SKILL.md": f"---\nname: deep\ndescription: Deep.\nextra: {DEEP}\n---\n",
        "heartbeats.json": "[" + "9" * 5000 + "]",
    }
    root = write_config(files(**hostile))
    done = run_ishiki("check", str(root), "--json")
    report = json.loads(done.stdout)
    assert (done.returncode, report["ok"]) == (1, False)
    assert [(e["file"], e["line"], e["message"]) for e in report["models"]["errors"]] == [
        (str(root / "demo.rules.yaml"), 2, "not UTF-8 text (byte 0xe9 at offset 21)")
    ]
    assert report["skills"] == {
        "skills": 1,
        "errors": [{"file": "skills/deep/SKILL.md", "line": 4, "path": "", "message": "nested deeper than 64 levels"}],
    }
    assert [e["message"] for e in report["heartbeats"]["errors"]] == [
        "not valid JSON: an integer of 5,000 digits; the limit is 100; the managed beats are kept as they were"
    ]
    text = run_ishiki("check", str(root))
    assert "Traceback" not in text.stdout + text.stderr
    assert "models.yaml: 1 error\n" in text.stdout
    assert "skills: 1 error (1 skill)\n  skills/deep/SKILL.md:4: nested deeper than 64 levels\n" in text.stdout
    assert "extensions: ok\n" in text.stdout


class Checked(Extension):
    """Reports one error per profile, the same for all (a shared file)."""

    def create(self, ctx: Any, config: PluginConfig) -> object:
        return object()

    def check(self, ctx: CheckContext, config: PluginConfig) -> Sequence[ConfigError]:
        return [ProfileInvalid("shared.json is broken", file="shared.json", line=1)]


class Raising(Extension):
    """A check with a bug."""

    def create(self, ctx: Any, config: PluginConfig) -> object:
        return object()

    def check(self, ctx: CheckContext, config: PluginConfig) -> Sequence[ConfigError]:
        raise RecursionError("maximum recursion depth exceeded")


class Confused(Extension):
    """A check that returns text instead of errors."""

    def create(self, ctx: Any, config: PluginConfig) -> object:
        return object()

    def check(self, ctx: CheckContext, config: PluginConfig) -> Sequence[ConfigError]:
        return ["not an error"]  # type: ignore[list-item]


def registry(**extensions: type[Extension]) -> PluginRegistry:
    extra = [ServiceRecord("ishiki.ext", n, f"tests:{c.__name__}", "t", "1", plugin=c) for n, c in extensions.items()]
    return PluginRegistry([*discover().records, *extra])


def test_extension_checks_run_per_profile_deduplicated_and_guarded(write_config: WriteConfig) -> None:
    with_all = PROFILE + "extends: {checked: {}, raising: {}, confused: {}}\n"
    root = write_config(
        files(**{"profiles/bea/profile.yml": with_all, "profiles/bea/persona.md": "Hi.\n"}),
    )
    (root / "profiles/ana/profile.yml").write_text(PROFILE + "extends: {checked: {}}\n")
    config = load_config_dir(root, env={}, registry=registry(checked=Checked, raising=Raising, confused=Confused))
    found = plugin_checks(config, env={})
    assert found.models == ()
    assert [(type(e), e.describe()) for e in found.extensions] == [
        (ProfileInvalid, "shared.json:1: shared.json is broken"),  # once, for the two profiles
        (PluginLoadFailed, "ishiki.ext.raising: ishiki.ext.raising: its check raised RecursionError: maximum "
         "recursion depth exceeded"),
        (PluginLoadFailed, "ishiki.ext.confused: ishiki.ext.confused: its check returned str, not a ConfigError"),
    ]  # fmt: skip


def test_a_model_api_check_sees_the_provider_and_the_config_dir(write_config: WriteConfig) -> None:
    root = write_config(files(**{"demo.rules.yaml": "rules: " + DEEP + "\n"}))
    found = plugin_checks(load_config_dir(root, env={}, registry=discover()), env={})
    assert [e.describe() for e in found.models] == [f"{root / 'demo.rules.yaml'}:1: nested deeper than 64 levels"]
    assert found.extensions == ()  # the built-in extensions keep the default check: nothing to report


def test_the_report_prints_a_profiles_warnings_under_it(
    write_config: WriteConfig, echo_models: str, plugin_registry: PluginRegistry
) -> None:
    from ishiki_host.cli.check import report

    profile = "model: default\nextends: {greeter: {config: {greeting: hi}}}\ncodemode: {direct: [greeter_greet]}\n"
    root = write_config(
        {"models.yaml": echo_models, "profiles/p/profile.yml": profile, "profiles/p/persona.md": "Hi.\n"}
    )
    lines = report(load_config_dir(root, env={}, registry=plugin_registry))
    assert lines[1:3] == [
        "  p  ready",
        f"      warning: {root}/profiles/p/profile.yml:3: codemode.direct[0]: no declared tool is named "
        "'greeter_greet'; extension 'greeter' declares no tool names (tool_names), so only a turn will tell",
    ]
    assert lines[-1] == "ok: 1 of 1 enabled profiles ready"  # a warning keeps the exit status
