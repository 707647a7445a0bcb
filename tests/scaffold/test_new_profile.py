"""``ishiki new profile``: every key of the schema, commented, in a profile that passes ``ishiki check``."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ishiki_host.config.profile import profile_from_document
from ishiki_host.config.schemas import load_schema
from ishiki_host.config.yamlio import parse_yaml
from ishiki_host.errors import ProfileInvalid, ScaffoldError
from ishiki_host.plugins.discovery import discover
from ishiki_host.scaffold import render_profile, write_profile

RunIshiki = Callable[..., subprocess.CompletedProcess[str]]
WriteConfig = Callable[..., Path]
# A commented-out key: "# key: value" or "# key:" at any indent (descriptions never start with "word:").
KEY_LINE = re.compile(r"^(\s*)# ([\w.:-]+:(?: .*)?)$")


def uncommented(text: str) -> str:
    """``text`` with every commented-out key set."""
    return "\n".join(KEY_LINE.sub(r"\1\2", line) for line in text.splitlines())


def keys_at_top(text: str) -> set[str]:
    return {m.group(2) for line in text.splitlines() if (m := re.match(r"^(# )?([A-Za-z_]+):", line))}


def test_every_top_level_key_of_the_schema_is_written() -> None:
    text = render_profile("helper")
    assert keys_at_top(text) == set(load_schema("profile")["properties"])
    assert "\nmodel: default\n" in text
    assert '\nchannels:\n  # The channel patterns claimed on that account.\n  console:local: ["*"]\n' in text


def test_every_nested_key_of_the_schema_is_written() -> None:
    text = render_profile("helper")
    schema = load_schema("profile")
    for key, sub in schema["properties"].items():
        for child in sub.get("properties", {}):
            assert re.search(rf"^# {key}:\n(?:  #.*\n)*  # {child}:", text, re.MULTILINE), f"{key}.{child}"


def test_the_text_is_a_valid_profile_as_written_and_with_every_key_set() -> None:
    registry = discover()
    text = render_profile("helper", registry=registry)
    for variant in (text, uncommented(text)):
        doc = parse_yaml(variant, "profile.yml", ProfileInvalid)
        profile, errors = profile_from_document("helper", Path("profile.yml"), doc, "persona", registry)
        assert [e.describe() for e in errors] == []
        assert profile is not None
    everything = yaml.safe_load(uncommented(text))
    assert set(everything) == set(load_schema("profile")["properties"])
    assert everything["context"]["standard"]["budget_ratio"] == 0.75  # the engine's own schema default
    assert everything["failover"] == {"attempts": 3, "backoff_ms": 500, "failover_on": "unavailable"}


def test_without_the_console_the_claim_is_shown_commented() -> None:
    text = render_profile("helper", claim_console=False)
    assert "\n# channels:\n" in text
    assert '  # console:local: ["*"]' in text
    assert yaml.safe_load(text).get("channels") is None


def test_the_written_profile_passes_ishiki_check(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    root = tmp_path / "bot"
    assert run_ishiki("init", str(root)).returncode == 0
    done = run_ishiki("new", "profile", "helper", str(root))
    assert done.returncode == 0, done.stderr
    assert "note:" not in done.stdout
    check = run_ishiki("check", str(root), "--json")
    assert check.returncode == 0, check.stdout
    states = {p["id"]: p["state"] for p in json.loads(check.stdout)["profiles"]}
    assert states == {"assistant": "ready", "helper": "ready"}
    text = (root / "profiles" / "helper" / "profile.yml").read_text()
    assert "\n# channels:\n" in text  # `ishiki init`'s assistant holds the console
    assert (root / "profiles" / "helper" / "persona.md").read_text().startswith("You are helper")


def test_a_profile_alone_claims_the_console_and_uses_a_group_of_models_yaml(
    write_config: WriteConfig, tmp_path: Path
) -> None:
    models = "providers:\n  p:\n    api: scripted\n    rules: []\n    models: [{id: m}]\n"
    models += "groups:\n  main:\n    models: [p:m]\n"
    root = write_config({"models.yaml": models})
    directory = write_profile(root, "solo")
    text = (directory / "profile.yml").read_text()
    assert "\nmodel: main\n" in text
    assert '\n  console:local: ["*"]\n' in text


def test_the_model_can_be_named(tmp_path: Path) -> None:
    directory = write_profile(tmp_path, "p", model="openai:gpt-4o")
    assert "\nmodel: openai:gpt-4o\n" in (directory / "profile.yml").read_text()


def test_existing_files_are_kept_unless_forced(tmp_path: Path) -> None:
    directory = write_profile(tmp_path, "p")
    (directory / "persona.md").write_text("mine")
    with pytest.raises(ScaffoldError, match=r"already has profile.yml, persona.md \(use --force"):
        write_profile(tmp_path, "p")
    assert (directory / "persona.md").read_text() == "mine"
    write_profile(tmp_path, "p", force=True)
    assert (directory / "persona.md").read_text() != "mine"


def test_the_command_refuses_a_bad_id_and_notes_a_missing_models_file(run_ishiki: RunIshiki, tmp_path: Path) -> None:
    bad = run_ishiki("new", "profile", "a/b", str(tmp_path))
    assert bad.returncode == 2
    assert "bad profile id 'a/b'" in bad.stderr
    good = run_ishiki("new", "profile", "solo", str(tmp_path))
    assert good.returncode == 0
    assert "has no models.yaml" in good.stdout
