"""``trust.unlisted`` and its older spelling ``allow_unlisted``; ``suggest_commands``; a ``model:`` that names
nothing gets the nearest names, in the loader and in the real ``ishiki check``."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from ishiki_host.config.models_loader import load_models
from ishiki_host.config.profile import ProfileLoad, load_profile
from ishiki_host.config.profile_types import TrustConfig
from ishiki_host.plugins.discovery import PluginRegistry

WriteConfig = Callable[..., Path]
ProfileFiles = Callable[..., dict[str, str]]
RunIshiki = Callable[..., subprocess.CompletedProcess[str]]

MODELS = """\
providers:
  echo:
    api: echo
    models:
      - id: small
        context_window: 8000
      - id: large-model
        context_window: 8000
groups:
  default:
    models: [echo:small]
  fastest:
    models: [echo:large-model]
"""


@pytest.fixture
def load(
    write_config: WriteConfig, profile_files: ProfileFiles, plugin_registry: PluginRegistry
) -> Callable[[str], ProfileLoad]:
    def run(text: str) -> ProfileLoad:
        root = write_config({"models.yaml": MODELS, **profile_files("p", text)})
        models, _ = load_models(root, {}, catalog=plugin_registry)
        return load_profile(root / "profiles" / "p", "profiles/p", plugin_registry, models)

    return run


def messages(result: ProfileLoad) -> list[tuple[int | None, str, str]]:
    return [(e.line, e.path, e.message) for e in result.errors]


@pytest.mark.parametrize(
    ("trust", "mode"),
    [
        ("{}", "serve"),
        ("{allow_unlisted: true}", "serve"),
        ("{allow_unlisted: false}", "refuse"),
        ("{unlisted: pairing}", "pairing"),
        ("{unlisted: refuse, allow_unlisted: false}", "refuse"),
        ("{unlisted: serve, allow_unlisted: true}", "serve"),
    ],
)
def test_unlisted_and_its_older_spelling(load: Callable[[str], ProfileLoad], trust: str, mode: str) -> None:
    profile = load(f"model: default\ntrust: {trust}\n").profile
    assert profile is not None
    assert profile.trust.unlisted == mode
    assert profile.trust.allow_unlisted is (mode == "serve")
    assert profile.trust.pairing_expiry_seconds == 3600


def test_unlisted_and_allow_unlisted_that_disagree_are_an_error(load: Callable[[str], ProfileLoad]) -> None:
    result = load("model: default\ntrust:\n  unlisted: pairing\n  allow_unlisted: false\n")
    assert messages(result) == [
        (
            4,
            "trust.allow_unlisted",
            "allow_unlisted: false means unlisted: refuse, but unlisted is 'pairing'; keep only unlisted",
        )
    ]
    assert messages(load("model: default\ntrust: {unlisted: serve, allow_unlisted: false}\n"))[0][1] == (
        "trust.allow_unlisted"
    )
    assert messages(load("model: default\ntrust: {unlisted: pair}\n"))[0][1] == "trust.unlisted"
    assert messages(load("model: default\ntrust: {pairing_expiry_seconds: 0}\n"))[0][1] == (
        "trust.pairing_expiry_seconds"
    )


def test_the_pairing_expiry_and_suggest_commands_are_read(load: Callable[[str], ProfileLoad]) -> None:
    profile = load("model: default\nsuggest_commands: false\ntrust: {unlisted: pairing, pairing_expiry_seconds: 90}\n")
    assert profile.profile is not None
    assert profile.profile.trust.pairing_expiry_seconds == 90
    assert profile.profile.suggest_commands is False
    assert load("model: default\n").profile.suggest_commands is True  # type: ignore[union-attr]


def test_trust_config_built_by_hand_agrees_with_itself() -> None:
    assert TrustConfig(allow_unlisted=False) == TrustConfig(unlisted="refuse")
    assert TrustConfig().unlisted_mode == "serve"
    with pytest.raises(ValueError, match="keep one of them"):
        TrustConfig(allow_unlisted=True, unlisted="pairing")
    pairing = TrustConfig(unlisted="pairing")
    assert pairing.allow_unlisted is False
    assert replace(pairing, owners=("fake:1",)).unlisted == "pairing"  # a copy keeps both fields as they are
    with pytest.raises(ValueError, match="pairing_expiry_seconds must be positive"):
        TrustConfig(pairing_expiry_seconds=-1)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            "fastst",
            "'fastst' names no group and no provider:modelId of models.yaml; did you mean 'fastest'?",
        ),
        (
            "large-model",
            "'large-model' names no group and no provider:modelId of models.yaml; did you mean 'echo:large-model'?",
        ),
        ("zzz", "'zzz' names no group and no provider:modelId of models.yaml (groups: 'default', 'fastest')"),
        ("ecko:small", "'ecko:small': models.yaml has no provider 'ecko'; did you mean 'echo'?"),
        ("qqq:small", "'qqq:small': models.yaml has no provider 'qqq'; did you mean 'echo:small'?"),
        ("qqq:zzz", "'qqq:zzz': models.yaml has no provider 'qqq' (providers: 'echo')"),
        ("echo:smal", "'echo:smal': provider 'echo' of models.yaml lists no model 'smal'; did you mean 'small'?"),
        (
            "echo:zzz",
            "'echo:zzz': provider 'echo' of models.yaml lists no model 'zzz' (it lists 'large-model', 'small')",
        ),
    ],
)
def test_a_model_reference_that_names_nothing_gets_the_nearest_names(
    load: Callable[[str], ProfileLoad], model: str, message: str
) -> None:
    result = load(f"model: {model}\n")
    assert [(e.path, re.sub(r"/\S*/models\.yaml", "models.yaml", e.message)) for e in result.errors] == [
        ("model", message)
    ]


def test_ishiki_check_shows_the_nearest_model_names(
    run_ishiki: RunIshiki, write_config: WriteConfig, profile_files: ProfileFiles
) -> None:
    root = write_config({"models.yaml": MODELS, **profile_files("p", "model: echo:smal\n")})
    done = run_ishiki("check", str(root), "--json", plugins=True)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    [profile] = report["profiles"]
    [error] = profile["errors"]
    assert "lists no model 'smal'; did you mean 'small'?" in error["message"]
    assert error["path"] == "model"
    text = run_ishiki("check", str(root), plugins=True)
    assert "did you mean 'small'?" in text.stdout + text.stderr
