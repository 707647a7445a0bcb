"""``models.yaml``: camelCase keys into the shared dataclasses, ``${VAR}``, provider-API keys, groups."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ishiki_host.config.models import CircuitBreakerConfig, GroupConfig, ModelSpec, ProviderConfig
from ishiki_host.config.models_loader import load_models
from ishiki_host.plugins.discovery import PluginRegistry

FULL = """\
providers:
  local:
    api: openai-completions
    base_url: ${BASE:-http://127.0.0.1:11434/v1}
    api_key: "${KEY}"
    headers: {X-Team: "${TEAM:-core}"}
    max_concurrency: 2
    timeout_seconds: 30
    connect_timeout_seconds: 3
    read_timeout_seconds: 20
    models:
      - id: llama3.1:8b
        context_window: 32768
        max_tokens: 1024
        tool_call: false
        input: [text, image]
      - id: tiny
groups:
  default:
    strategy: round-robin
    models: [local:llama3.1:8b, local:tiny]
    circuit_breaker: {failure_threshold: 5, cooldown_seconds: 10}
    seed: 7
"""


def write(tmp_path: Path, text: str, name: str = "models.yaml") -> Path:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_full_file_builds_the_dataclasses(tmp_path: Path) -> None:
    models, errors = load_models(write(tmp_path, FULL), {"KEY": "sk-1"})
    assert errors == []
    local = models.providers["local"]
    assert local == ProviderConfig(
        id="local",
        api="openai-completions",
        base_url="http://127.0.0.1:11434/v1",
        api_key="sk-1",
        headers={"X-Team": "core"},
        models=(ModelSpec("llama3.1:8b", 32768, 1024, False, ("text", "image")), ModelSpec("tiny")),
        max_concurrency=2,
        timeout_seconds=30.0,
        connect_timeout_seconds=3.0,
        read_timeout_seconds=20.0,
        options={},
    )
    assert models.groups["default"] == GroupConfig(
        "default", ("local:llama3.1:8b", "local:tiny"), "round-robin", CircuitBreakerConfig(5, 10.0), 7
    )
    assert models.resolve("default") == ("local:llama3.1:8b", "local:tiny")
    assert models.resolve("local:llama3.1:8b") == ("local:llama3.1:8b",)
    assert models.apis_for("default") == ("openai-completions",)
    assert models.file == str(tmp_path / "models.yaml")


def test_schema_defaults_equal_dataclass_defaults(tmp_path: Path) -> None:
    text = "providers:\n  p: {api: x, models: [{id: m}]}\ngroups:\n  g: {models: ['p:m']}\n"
    models, errors = load_models(write(tmp_path, text), {})
    assert errors == []
    assert models.providers["p"] == ProviderConfig(id="p", api="x", models=(ModelSpec("m"),))
    assert models.groups["g"] == GroupConfig("g", ("p:m",))


def test_unset_variable_is_an_error_naming_it_and_the_file(tmp_path: Path) -> None:
    models, errors = load_models(write(tmp_path, FULL), {})
    assert [e.describe() for e in errors] == [
        f"{tmp_path}/models.yaml:5: providers.local.api_key: environment variable KEY is not set "
        "(write ${KEY:-default} to give a default)",
        f"{tmp_path}/models.yaml:21: groups.default.models[0]: 'local:llama3.1:8b': provider 'local' has errors",
        f"{tmp_path}/models.yaml:21: groups.default.models[1]: 'local:tiny': provider 'local' has errors",
    ]
    assert "local" not in models.providers
    assert models.groups == {}


def test_missing_and_doubled_files(tmp_path: Path) -> None:
    models, errors = load_models(tmp_path, {})
    assert models.providers == {}
    assert "not found" in errors[0].message
    write(tmp_path, "providers: {}\n")
    write(tmp_path, "providers: {}\n", "models.yml")
    _, errors = load_models(tmp_path, {})
    assert "both models.yaml and models.yml" in errors[0].message


def test_wrong_shapes_are_reported_and_the_rest_loads(tmp_path: Path) -> None:
    text = """\
providers:
  good: {api: x, models: [{id: m}]}
  bad: {api: x, models: [{id: m, context_window: lots}]}
  bad:id: {api: x, models: [{id: m}]}
groups:
  g: {models: [good:m, bad:m, nope:m, good:mm]}
  h: {strategy: fastest, models: [good:m]}
  ok: {models: [good:m]}
extra: 1
"""
    models, errors = load_models(write(tmp_path, text), {})
    messages = {(e.path, e.message) for e in errors}
    assert ("providers.bad.models[0].context_window", "expected an integer, got string ('lots')") in messages
    assert ("providers.bad:id", "a provider id must not contain ':' or spaces") in messages
    assert ("groups.g.models[1]", "'bad:m': provider 'bad' has errors") in messages
    assert ("groups.g.models[2]", "'nope:m': no provider 'nope'") in messages
    assert ("groups.g.models[3]", "'good:mm': provider 'good' lists no model 'mm'; did you mean 'm'?") in messages
    assert ("groups.h.strategy", "must be one of 'failover', 'round-robin', 'random'; got 'fastest'") in messages
    assert ("extra", "unknown key 'extra'") in messages
    assert all(e.line is not None for e in errors)
    assert set(models.providers) == {"good"}
    assert set(models.groups) == {"ok"}


def test_not_a_mapping(tmp_path: Path) -> None:
    _, errors = load_models(write(tmp_path, "- a\n- b\n"), {})
    assert errors[0].message == "expected a mapping with 'providers' and 'groups'"


def test_provider_api_keys_are_checked_by_the_api_schema(
    tmp_path: Path, plugin_registry: PluginRegistry, echo_models: str
) -> None:
    models, errors = load_models(write(tmp_path, echo_models), {}, catalog=plugin_registry)
    assert errors == []
    assert models.providers["echo"].options == {"prefix": "echo: "}
    text = "providers:\n  e: {api: echo, prefx: '>', models: [{id: m}]}\n  h: {api: echo-http, models: [{id: m}]}\n"
    models, errors = load_models(write(tmp_path, text), {}, catalog=plugin_registry)
    assert {(e.path, e.message) for e in errors} == {
        ("providers.e.prefx", "unknown key 'prefx'; did you mean 'prefix'?"),
        ("providers.h", "api 'echo-http' needs base_url"),
    }
    assert models.providers == {}


def test_without_catalog_extra_keys_land_in_options(tmp_path: Path) -> None:
    text = "providers:\n  s: {api: scripted, rules: demo.yaml, models: [{id: m}]}\n"
    models, errors = load_models(write(tmp_path, text), {})
    assert errors == []
    assert models.providers["s"].options == {"rules": "demo.yaml"}


def test_unknown_api_is_left_to_activation(
    tmp_path: Path, plugin_registry: PluginRegistry, profile_files: Callable[..., dict[str, str]]
) -> None:
    text = "providers:\n  s: {api: not-installed, anything: 1, models: [{id: m}]}\n"
    models, errors = load_models(write(tmp_path, text), {}, catalog=plugin_registry)
    assert errors == []
    assert models.apis_for("s:m") == ("not-installed",)
