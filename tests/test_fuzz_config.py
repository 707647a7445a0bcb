"""Property-based: whatever document the loaders get, they return values or ``ConfigError``s, never crash."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ishiki_host.config.host import host_from_document
from ishiki_host.config.models_loader import load_models, models_from_document
from ishiki_host.config.profile import profile_from_document
from ishiki_host.config.yamlio import load_yaml, parse_yaml
from ishiki_host.errors import ConfigError, HostConfigInvalid, ModelsConfigInvalid, ProfileInvalid
from ishiki_host.plugins.discovery import discover

REGISTRY = discover()
PROFILE_KEYS = [
    "model", "enable", "mode", "channels", "extends", "context", "wakeup", "toolcall", "failover", "codemode",
    "toolsearch", "typing", "resources", "trust", "session", "reply_with_text", "max_steps", "mdoe",
]  # fmt: skip
WORDS = st.sampled_from(
    ["standard", "native", "*", "group:*", "!x", "!", "", "console:local", "a:b", "default", "enable", "config",
     "engine", "refillRatio", "keywords", "auto", "cross", "channel", "echo:small", "x" * 200]
)  # fmt: skip
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), WORDS, st.text(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(WORDS, st.text(max_size=8)), inner, max_size=4)
    ),
    max_leaves=25,
)
profiles = st.dictionaries(st.sampled_from(PROFILE_KEYS), values, max_size=8)
models_docs = st.fixed_dictionaries(
    {},
    optional={
        "providers": st.dictionaries(
            st.sampled_from(["p", "q:r", "echo", ""]),
            st.dictionaries(st.sampled_from(["api", "baseUrl", "models", "apiKey", "headers", "prefix"]), values),
        ),
        "groups": st.dictionaries(
            st.sampled_from(["default", "g"]),
            st.dictionaries(st.sampled_from(["models", "strategy", "circuitBreaker", "seed"]), values),
        ),
    },
)


def dump(value: Any) -> str:
    return yaml.safe_dump(value, allow_unicode=True)


def assert_config_errors(errors: list[ConfigError]) -> None:
    for error in errors:
        assert isinstance(error, ConfigError)
        assert error.file
        assert error.message


@given(st.one_of(profiles, values))
def test_profile_documents_never_crash(document: Any) -> None:
    doc = parse_yaml(dump(document), "profile.yml", ProfileInvalid)
    profile, errors = profile_from_document("p", Path("profile.yml"), doc, "", REGISTRY, None)
    assert (profile is None) == bool(errors)
    assert_config_errors(errors)


@given(st.one_of(models_docs, values))
def test_models_documents_never_crash(document: Any) -> None:
    _, errors = models_from_document(parse_yaml(dump(document), "models.yaml", ModelsConfigInvalid, {}), REGISTRY)
    assert_config_errors(errors)


@given(
    st.one_of(st.dictionaries(st.sampled_from(["data_dir", "timezone", "fsync", "channels", "memory"]), values), values)
)
def test_host_documents_never_crash(document: Any) -> None:
    _, errors = host_from_document(
        Path("."), parse_yaml(dump(document), "ishiki.yaml", HostConfigInvalid, {}), REGISTRY
    )
    assert_config_errors(errors)


@given(st.text(max_size=300))
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        doc = parse_yaml(text, "f.yml", ProfileInvalid, {"A": "1"})
    except ProfileInvalid as exc:
        failure: ConfigError = exc
        assert_config_errors([failure])
    else:
        assert_config_errors(doc.errors)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(st.binary(max_size=300))
def test_any_bytes_load_or_fail_cleanly(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "models.yaml"
        path.write_bytes(data)
        try:
            load_yaml(path, "models.yaml", ModelsConfigInvalid, {})
        except ModelsConfigInvalid as exc:
            failure: ConfigError = exc
            assert_config_errors([failure])
        _, errors = load_models(Path(directory), {}, catalog=REGISTRY)
        assert_config_errors(errors)
