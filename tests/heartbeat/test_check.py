"""``check_beat_file``: heartbeats.json checked against a config directory as the host would sync it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ishiki_host.heartbeat.check import check_beat_file
from ishiki_host.plugins.configdir import ConfigDir, load_config_dir
from ishiki_host.plugins.discovery import PluginRegistry

NOW = 1_717_200_000.0
CONSOLE = "model: default\nchannels:\n  console:local: ['*']\n"
TARGET = {"profile": "p", "sid": "console:local", "channel": "private:local"}


def config(
    write_config: Callable[..., Path],
    profile_files: Callable[..., dict[str, str]],
    echo_models: str,
    registry: PluginRegistry,
    beats: list[dict[str, Any]] | None,
    host: str = "",
    profiles: dict[str, str] | None = None,
) -> ConfigDir:
    files: dict[str, str] = {"models.yaml": echo_models, "ishiki.yaml": host}
    for pid, text in (profiles or {"p": CONSOLE}).items():
        files.update(profile_files(pid, text))
    if beats is not None:
        files["heartbeats.json"] = json.dumps(beats)
    return load_config_dir(write_config(files), env={}, registry=registry)


def test_no_file_is_fine(write_config: Any, profile_files: Any, echo_models: str, plugin_registry: Any) -> None:
    checked = check_beat_file(config(write_config, profile_files, echo_models, plugin_registry, None), now=NOW)
    assert (checked.ok, checked.found, checked.beats, checked.errors) == (True, False, 0, ())


def test_targets_are_checked_against_the_profiles(
    write_config: Any, profile_files: Any, echo_models: str, plugin_registry: Any
) -> None:
    beats = [
        {"id": "ok", "text": "t", "cron": "0 9 * * *", "type": "task", "target": TARGET},
        {"id": "typo", "text": "t", "cron": "0 9 * * *", "type": "task", "target": {**TARGET, "profile": "pp"}},
        {"id": "waits", "text": "t", "cron": "0 9 * * *", "type": "task", "target": {**TARGET, "profile": "w"}},
        {"id": "theirs", "text": "t", "cron": "0 9 * * *", "type": "task",
         "target": {"profile": "w", "sid": "console:local", "channel": "private:local"}},
        {"id": "off", "text": "t", "cron": "0 9 * * *", "type": "task",
         "target": {"profile": "q", "sid": "console:other", "channel": "group:1"}},
    ]  # fmt: skip
    profiles = {
        "p": CONSOLE,
        "q": "model: default\nchannels:\n  console:other: ['*']\nextends: {heartbeat: {enable: false}}\n",
        "w": "model: default\nchannels:\n  console:elsewhere: ['*']\nextends: {notinstalled: {}}\n",
    }
    loaded = config(write_config, profile_files, echo_models, plugin_registry, beats, profiles=profiles)
    checked = check_beat_file(loaded, now=NOW)
    assert checked.beats == 1
    assert [(e.path, e.message) for e in checked.errors] == [
        ("[1]", "beat 'typo': target: there is no profile 'pp' (did you mean 'p'?)"),
        ("[2]", "beat 'waits': target: profile 'w' is waiting for ishiki.ext.notinstalled"),
        ("[3]", "beat 'theirs': target: profile 'w' is waiting for ishiki.ext.notinstalled"),
        ("[4]", "beat 'off': target: profile 'q' turns heartbeats off (extends: {heartbeat: {enable: false}})"),
    ]


def test_beats_without_a_target_need_heartbeat_model(
    write_config: Any, profile_files: Any, echo_models: str, plugin_registry: Any
) -> None:
    beats = [
        {"id": "quiet", "text": "t", "cron": "0 9 * * *", "type": "task"},
        {"id": "__clear_images__", "text": "7d", "cron": "0 3 * * *"},
    ]
    bare = config(write_config, profile_files, echo_models, plugin_registry, beats)
    [error] = check_beat_file(bare, now=NOW).errors
    assert error.message == (
        "beat 'quiet' has no target, and ishiki.yaml sets no heartbeat.model to run it on; its runs fail"
    )
    good = config(write_config, profile_files, echo_models, plugin_registry, beats, "heartbeat: {model: default}\n")
    assert check_beat_file(good, now=NOW).ok
    wrong = config(write_config, profile_files, echo_models, plugin_registry, beats, "heartbeat: {model: nope}\n")
    [error] = check_beat_file(wrong, now=NOW).errors
    assert (error.path, error.message) == (
        "heartbeat.model",
        "heartbeat.model 'nope' is not a group or provider:modelId of models.yaml",
    )
    assert error.file is not None
    assert error.file.endswith("ishiki.yaml")


def test_a_file_that_is_not_json_is_one_error(
    write_config: Any, profile_files: Any, echo_models: str, plugin_registry: Any
) -> None:
    loaded = config(write_config, profile_files, echo_models, plugin_registry, [])
    (loaded.root / "heartbeats.json").write_text('{"id": "x"}', encoding="utf-8")
    checked = check_beat_file(loaded, now=NOW)
    [error] = checked.errors
    assert (checked.found, checked.beats) == (True, 0)
    assert error.message == "expected a JSON array of beats, got an object; the managed beats are kept as they were"
    assert checked.as_dict()["errors"] == [error.as_dict()]
