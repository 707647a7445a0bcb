"""snake_case config keys: every schema says them, the old camelCase spellings still load with a warning.

The files written here in camelCase are deliberate: they prove the old spelling keeps its meaning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ishiki_host.config.host import host_from_document
from ishiki_host.config.keys import normalize_keys, snake_case
from ishiki_host.config.models_loader import models_from_document
from ishiki_host.config.profile import profile_from_document
from ishiki_host.config.schemas import load_schema
from ishiki_host.config.validation import schema_problems, with_defaults
from ishiki_host.config.yamlio import parse_yaml
from ishiki_host.errors import ConfigError, HostConfigInvalid, ModelsConfigInvalid, ProfileInvalid
from ishiki_host.plugins.configdir import load_config_dir
from ishiki_host.plugins.discovery import PluginRegistry, discover
from tests.conftest import RunIshiki, WriteConfig

CAMEL = re.compile(r"^[a-z][a-z0-9]*[A-Z]")
EXTERNAL = {"mcpServers"}  # mcp.json's published format (packages/ishiki-ext-mcp/README.md)
REGISTRY = discover()

OLD_MODELS = """\
providers:
  local:
    api: openai-completions
    baseUrl: http://127.0.0.1:9/v1
    apiKey: sk-test
    maxConcurrency: 3
    connectTimeoutSeconds: 2
    readTimeoutSeconds: 7
    timeoutSeconds: 30
    streamUsage: false
    maxTokensField: max_completion_tokens
    models:
      - id: m
        contextWindow: 5000
        maxTokens: 100
        toolCall: false
        price: {input: 1, output: 2, cachedInput: 0.5, currency: USD}
groups:
  default:
    models: [local:m]
    circuitBreaker:
      failureThreshold: 2
      cooldownSeconds: 9
"""

OLD_PROFILE = """\
model: default
context:
  engine: standard
  standard:
    budgetRatio: 0.6
    summaryMaxTokens: 300
wakeup:
  engine: willingness
  willingness:
    maxWillingness: 90
    probabilityThreshold: 40
failover:
  backoffMs: 10
  failoverOn: any
codemode:
  timeoutMs: 900
  maxToolCalls: 3
toolsearch:
  maxResults: 2
typing:
  charsPerSecond: 10
  maxDelayMs: 5
resources:
  artifactThresholdChars: 1000
  maxAssetBytes: 10
"""


def _snake(text: str) -> str:
    return re.sub(r"(?<![\w-])([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*):", lambda m: f"{snake_case(m.group(1))}:", text)


def _subschemas(schema: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(schema, Mapping):
        yield path, schema
        for key, value in schema.items():
            if key in ("properties", "$defs", "patternProperties", "definitions") and isinstance(value, Mapping):
                for name, sub in value.items():
                    yield from _subschemas(sub, f"{path}.{name}")
            elif key not in ("default", "examples", "enum", "const"):
                yield from _subschemas(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _subschemas(item, f"{path}[{index}]")


def _schemas(registry: PluginRegistry) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name in ("host", "models", "profile"):
        yield f"{name}.schema.json", load_schema(name)
    for record in registry.records:
        spec = registry.spec(f"{record.group}.{record.name}")
        if spec is not None:
            yield spec.full_name, spec.config_schema


def test_every_schema_of_the_host_and_its_plugins_names_its_keys_in_snake_case() -> None:
    found = [
        f"{where}{path}: {key}"
        for where, schema in _schemas(REGISTRY)
        for path, sub in _subschemas(schema, "")
        for key in (sub.get("properties") or {})
        if isinstance(key, str) and CAMEL.match(key) and key not in EXTERNAL
    ]
    assert len(list(_schemas(REGISTRY))) > 10  # the installed plugins are in the walk
    assert found == []


def test_snake_case_of_the_old_spellings() -> None:
    cases = {"baseUrl": "base_url", "timeoutMS": "timeout_ms", "maxTokensField": "max_tokens_field"}
    assert {old: snake_case(old) for old in cases} == cases
    assert [snake_case(k) for k in ("data_dir", "Authorization", "X-Key", "url")] == [
        "data_dir",
        "Authorization",
        "X-Key",
        "url",
    ]


def test_old_models_keys_load_with_the_same_meaning_and_a_warning_each() -> None:
    old, old_errors = models_from_document(parse_yaml(OLD_MODELS, "models.yaml", ModelsConfigInvalid), REGISTRY)
    new, new_errors = models_from_document(parse_yaml(_snake(OLD_MODELS), "models.yaml", ModelsConfigInvalid), REGISTRY)
    assert old_errors == new_errors == []
    assert old == new
    assert new.warnings == ()
    provider = old.providers["local"]
    assert (provider.base_url, provider.max_concurrency, provider.read_timeout_seconds) == (
        "http://127.0.0.1:9/v1",
        3,
        7,
    )
    assert provider.options == {"stream_usage": False, "max_tokens_field": "max_completion_tokens"}
    assert old.groups["default"].circuit_breaker.failure_threshold == 2
    assert old.providers["local"].models[0].price is not None
    shown = [w.describe() for w in old.warnings]
    assert shown[0] == "models.yaml:4: providers.local.baseUrl: `baseUrl` is the old spelling; write `base_url`"
    assert len(shown) == 15  # one per camelCase key
    assert (
        "models.yaml:10: providers.local.streamUsage: `streamUsage` is the old spelling; write `stream_usage`" in shown
    )


def test_old_profile_keys_and_engine_options_load_with_the_same_meaning() -> None:
    def load(text: str) -> tuple[Any, list[ConfigError], list[ConfigError]]:
        doc = parse_yaml(text, "profile.yml", ProfileInvalid)
        profile, errors = profile_from_document("p", Path("profile.yml"), doc, "persona", REGISTRY)
        return profile, errors, doc.warnings

    old, old_errors, warnings = load(OLD_PROFILE)
    new, new_errors, none = load(_snake(OLD_PROFILE))
    assert old_errors == new_errors == []
    assert none == []
    assert old.document == new.document
    assert (old.failover, old.codemode, old.typing, old.resources) == (
        new.failover,
        new.codemode,
        new.typing,
        new.resources,
    )
    assert old.context.config == new.context.config
    assert old.context.config["budget_ratio"] == 0.6
    assert old.wakeup.config["max_willingness"] == 90
    assert "maxWillingness" not in old.wakeup.config
    assert old.toolsearch is not None
    assert old.toolsearch.max_results == 2
    assert [w.path for w in sorted(warnings, key=lambda w: w.line or 0)][:3] == [
        "context.standard.budgetRatio",
        "context.standard.summaryMaxTokens",
        "wakeup.willingness.maxWillingness",
    ]
    assert len(warnings) == 13


def test_an_error_under_a_renamed_key_keeps_its_line() -> None:
    text = "providers:\n  x:\n    api: scripted\n    models:\n      - id: m\n        contextWindow: 0\n"
    _, errors = models_from_document(parse_yaml(text, "models.yaml", ModelsConfigInvalid), REGISTRY)
    assert [e.describe() for e in errors] == [
        "models.yaml:6: providers.x.models[0].context_window: must be >= 1; got 0"
    ]


def test_a_key_in_both_spellings_is_an_error_naming_both() -> None:
    text = "providers:\n  x:\n    api: scripted\n    maxConcurrency: 2\n    max_concurrency: 3\n    models: [{id: m}]\n"
    config, errors = models_from_document(parse_yaml(text, "models.yaml", ModelsConfigInvalid), REGISTRY)
    assert [e.describe() for e in errors] == [
        "models.yaml:4: providers.x.maxConcurrency: `maxConcurrency` and `max_concurrency` are one key written "
        "twice (`maxConcurrency` is the old spelling); keep `max_concurrency`"
    ]
    assert "x" not in config.providers
    doc = parse_yaml(
        "model: m\ncontext:\n  standard:\n    budgetRatio: 0.5\n    budget_ratio: 0.4\n", "p.yml", ProfileInvalid
    )
    _, problems = profile_from_document("p", Path("p.yml"), doc, "persona", REGISTRY)
    assert any("`budgetRatio` and `budget_ratio`" in e.message and e.line == 4 for e in problems)


def test_an_unknown_camel_case_key_stays_an_unknown_key_with_its_hint() -> None:
    text = "providers:\n  x:\n    api: scripted\n    baseUrll: http://a\n    models: [{id: m}]\n"
    _, errors = models_from_document(parse_yaml(text, "models.yaml", ModelsConfigInvalid), REGISTRY)
    assert [e.message for e in errors] == ["unknown key 'baseUrll'; did you mean 'base_url'?"]


def test_names_in_maps_are_never_renamed() -> None:
    text = "providers:\n  myLocal:\n    api: scripted\n    models: [{id: bigModel}]\ngroups:\n  fastOnes:\n    models: [myLocal:bigModel]\n"  # noqa: E501
    config, errors = models_from_document(parse_yaml(text, "models.yaml", ModelsConfigInvalid), REGISTRY)
    assert errors == []
    assert config.warnings == ()
    assert set(config.providers) == {"myLocal"}
    assert set(config.groups) == {"fastOnes"}


def test_the_face_helpers_give_a_plugin_snake_case_keys() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_items": {"type": "integer", "default": 3},
            "inner": {"type": "object", "properties": {"time_limit": {"type": "integer"}}},
        },
    }
    assert with_defaults(schema, {"maxItems": 5, "inner": {"timeLimit": 1}}) == {
        "max_items": 5,
        "inner": {"time_limit": 1},
    }
    doc = parse_yaml("maxItems: 5\ninner:\n  timeLimit: x\n", "own.yaml", ConfigError)
    problems = schema_problems(schema, doc.data, doc, ConfigError)
    assert [e.describe() for e in problems] == ["own.yaml:3: inner.time_limit: expected an integer, got string ('x')"]
    assert [w.path for w in doc.warnings] == ["maxItems", "inner.timeLimit"]


def test_refs_and_branches_are_followed() -> None:
    schema = {
        "$defs": {"limit": {"type": "object", "properties": {"max_bytes": {"type": "integer"}}}},
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/limit"},
            "b": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/limit"}]},
            "c": {"type": "array", "items": {"allOf": [{"properties": {"read_only": {"type": "boolean"}}}]}},
            "d": {"type": "object", "patternProperties": {"^x": {"properties": {"per_item": {}}}}},
        },
    }
    data = {"a": {"maxBytes": 1}, "b": {"maxBytes": 2}, "c": [{"readOnly": True}], "d": {"xOne": {"perItem": 1}}}
    found = normalize_keys(schema, data)
    assert found.data == {
        "a": {"max_bytes": 1},
        "b": {"max_bytes": 2},
        "c": [{"read_only": True}],
        "d": {"xOne": {"per_item": 1}},
    }
    assert [r.path for r in found.renames] == [
        ("a", "maxBytes"),
        ("b", "maxBytes"),
        ("c", 0, "readOnly"),
        ("d", "xOne", "perItem"),
    ]


_SNAKE_KEYS = st.sampled_from(["base_url", "max_tokens", "models", "id", "providers", "api", "circuit_breaker", "x"])
_OLD_KEYS = st.sampled_from(["baseUrl", "maxTokens", "contextWindow", "circuitBreaker", "failureThreshold", "myName"])
_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5)


def _documents(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=20,
    )


@settings(max_examples=300, deadline=None)
@given(_documents(_SNAKE_KEYS | st.from_regex(r"\A[a-z_0-9]{1,8}\Z")))
def test_a_document_already_in_snake_case_is_left_as_it_is(data: Any) -> None:
    for name in ("models", "profile", "host"):
        found = normalize_keys(load_schema(name), {"providers": {"p": data}, "groups": data, "codemode": data})
        assert found.renames == ()
        assert found.data == {"providers": {"p": data}, "groups": data, "codemode": data}


@settings(max_examples=300, deadline=None)
@given(_documents(_SNAKE_KEYS | _OLD_KEYS))
def test_normalizing_is_idempotent(data: Any) -> None:
    schema = load_schema("models")
    wrapped = {"providers": {"p": data, "q": {"models": [data]}}, "groups": {"g": data}}
    once = normalize_keys(schema, wrapped)
    twice = normalize_keys(schema, once.data)
    assert twice.data == once.data
    assert twice.renames == ()
    assert json.dumps(wrapped, sort_keys=True, default=str) == json.dumps(
        {"providers": {"p": data, "q": {"models": [data]}}, "groups": {"g": data}}, sort_keys=True, default=str
    )  # the input is never changed


def test_ishiki_check_suggests_the_snake_case_spelling_and_still_passes(
    run_ishiki: RunIshiki, write_config: WriteConfig
) -> None:
    root = write_config(
        {
            "models.yaml": "providers:\n  demo:\n    api: scripted\n    maxConcurrency: 2\n"
            "    models:\n      - id: demo\n        contextWindow: 32768\n",
            "profiles/ana/profile.yml": "model: demo:demo\nchannels:\n  console:local: ['*']\nfailover:\n  failoverOn: any\n",  # noqa: E501
            "profiles/ana/persona.md": "You are Ana.\n",
        }
    )
    done = run_ishiki("check", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    models = "providers.demo.maxConcurrency: `maxConcurrency` is the old spelling; write `max_concurrency`"
    profile = "failover.failoverOn: `failoverOn` is the old spelling; write `failover_on`"
    assert f"  warning: {root}/models.yaml:4: {models}" in lines
    assert f"      warning: {root}/profiles/ana/profile.yml:5: {profile}" in lines
    assert lines[-1] == "ok: 1 of 1 enabled profiles ready"
    report = json.loads(run_ishiki("check", str(root), "--json").stdout)
    assert report["ok"] is True
    assert [w["path"] for w in report["models"]["warnings"]] == [
        "providers.demo.maxConcurrency",
        "providers.demo.models[0].contextWindow",
    ]
    assert [w["line"] for w in report["profiles"][0]["warnings"]] == [5]


def test_ishiki_check_fails_on_a_key_in_both_spellings(run_ishiki: RunIshiki, write_config: WriteConfig) -> None:
    root = write_config(
        {
            "models.yaml": "providers:\n  demo:\n    api: scripted\n    maxConcurrency: 2\n    max_concurrency: 2\n"
            "    models: [{id: demo}]\n"
        }
    )
    done = run_ishiki("check", str(root))
    assert done.returncode == 1
    assert "`maxConcurrency` and `max_concurrency` are one key written twice" in done.stdout


@pytest.mark.parametrize("old", ["maxResults", "shellEnv"])
def test_an_extension_config_in_the_old_spelling_reaches_the_plugin_in_snake_case(old: str) -> None:
    value = 4 if old == "maxResults" else {"A": "1"}
    doc = parse_yaml(
        f"model: m\nextends:\n  workspace:\n    config:\n      {old}: {json.dumps(value)}\n", "p.yml", ProfileInvalid
    )
    profile, errors = profile_from_document("p", Path("p.yml"), doc, "persona", REGISTRY)
    assert errors == []
    assert profile is not None
    config = next(e.config for e in profile.extends if e.name == "workspace")
    assert config[snake_case(old)] == value
    assert old not in config
    assert [w.line for w in doc.warnings] == [5]


REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _yaml_blocks() -> Iterator[tuple[str, str]]:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted(REPO.glob("packages/*/README.md"))]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            yield f"{page.relative_to(REPO)}:{text[: match.start()].count(chr(10)) + 1}", match.group(1)


def test_the_docs_and_the_example_config_write_snake_case_only() -> None:
    warned: list[str] = []
    for where, code in _yaml_blocks():
        kind = code.split("\n", 1)[0]
        if kind.startswith("# profile.yml"):
            doc = parse_yaml(code, where, ProfileInvalid)
            profile_from_document("snippet", Path("profile.yml"), doc, "", REGISTRY)
        elif kind.startswith("# models.yaml"):
            doc = parse_yaml(code, where, ModelsConfigInvalid)
            models_from_document(doc, REGISTRY)
        elif kind.startswith("# ishiki.yaml"):
            doc = parse_yaml(code, where, HostConfigInvalid)
            host_from_document(Path("."), doc, REGISTRY)
        else:
            continue
        warned += [w.describe() for w in doc.warnings]
    example = load_config_dir(REPO, registry=REGISTRY)
    warned += [w.describe() for w in (*example.host.warnings, *example.models.warnings)]
    warned += [w.describe() for state in example.profiles for w in state.warnings]
    assert warned == []
