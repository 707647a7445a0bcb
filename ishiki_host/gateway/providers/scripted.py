"""``scripted``: a model that answers from rules, for offline demos and persona tests.

Provider options: ``rules``, either a list of rules or the path of a YAML file holding one (relative paths are
relative to the config directory), an optional ``default`` reply, and ``word_delay_ms`` (default 0): the pause
between the words of a streamed answer, so a channel that shows replies as they are written (the console,
Telegram's drafts) shows the demo's text coming in word by word. A rule::

    - match: "weather"            # case-insensitive substring of the last user message, or
      regex: "(?i)^hi\\b"          # a Python regular expression searched in it
      tool_calls:                 # tools to call first (arguments: a mapping, or raw text)
        - {name: read, arguments: {url: "local://forecast.txt"}}
      reply: "Sunny all week."    # the text answered (after the tool results, when there are tool calls)
      delay_ms: 200               # wait this long before answering

The first rule that matches wins; a rule with neither ``match`` nor ``regex`` matches everything (put it last
as the default). With tool calls, the rule answers the calls while the last message is the user's, and its
``reply`` once the last message is a tool result, so a turn never loops. Answers are deterministic: tool-call
ids count up per provider (``scripted-1-0`` is the first call of the first answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx

from ishiki_host.config.models import ModelSpec, ProviderConfig
from ishiki_host.config.yamlio import load_yaml
from ishiki_host.core.model import ModelRequest, ModelResult, StreamDone, StreamEvent, TextDelta, ToolCallDelta
from ishiki_host.core.tokens import Estimator, estimate_tokens
from ishiki_host.errors import ConfigError, ModelsConfigInvalid
from ishiki_host.gateway.api import ModelAPI
from ishiki_host.gateway.assemble import StreamAssembler

__all__ = ["CONFIG_DIR_OPTION", "Rule", "ScriptedAPI", "ScriptedClient", "load_rules"]

CONFIG_DIR_OPTION = "_config_dir"
"""The option key under which the gateway passes the config directory to provider APIs."""
NO_RULE_REPLY = "I have no scripted reply for that."
_RULE_KEYS = {"match", "regex", "reply", "tool_calls", "delay_ms"}


@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule."""

    match: str | None = None
    regex: re.Pattern[str] | None = None
    reply: str = ""
    tool_calls: tuple[tuple[str, str], ...] = ()  # (name, arguments as JSON text)
    delay_ms: int = 0

    def matches(self, text: str) -> bool:
        """Whether this rule answers ``text``."""
        if self.regex is not None:
            return self.regex.search(text) is not None
        return self.match is None or self.match.lower() in text.lower()


def _rule(raw: Any, where: str, file: str | None) -> Rule:
    def fail(message: str, key: str = "") -> ModelsConfigInvalid:
        return ModelsConfigInvalid(message, file=file, path=f"{where}.{key}" if key else where)

    if not isinstance(raw, Mapping):
        raise fail("a rule must be a mapping")
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (rule keys: {', '.join(sorted(_RULE_KEYS))})", unknown[0])
    for key in ("match", "regex", "reply"):
        if key in raw and not isinstance(raw[key], str):
            raise fail("must be a string", key)
    regex = None
    if "regex" in raw:
        try:
            regex = re.compile(raw["regex"])
        except re.error as exc:
            raise fail(f"invalid regular expression: {exc}", "regex") from None
    delay = raw.get("delay_ms", 0)
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
        raise fail("must be a non-negative integer", "delay_ms")
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise fail("must be a list", "tool_calls")
    parsed: list[tuple[str, str]] = []
    for index, call in enumerate(calls):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise fail("a tool call needs a string 'name'", f"tool_calls[{index}]")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, Mapping | str):
            raise fail("must be a mapping or a string", f"tool_calls[{index}].arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments), ensure_ascii=False)
        parsed.append((call["name"], text))
    return Rule(raw.get("match"), regex, raw.get("reply", ""), tuple(parsed), delay)


def load_rules(source: str | Sequence[Any], config_dir: str | None, *, where: str = "rules") -> tuple[Rule, ...]:
    """Rules from an inline list, or from a YAML file (a list, or a mapping with ``rules``).

    Raises only ``ModelsConfigInvalid``, naming the file (and line) or the rule: the file is read by the
    hardened YAML loader, so a binary, huge, deeply nested or alias-bombed file is refused, never a crash.
    """
    file: str | None = None
    raw: Any = source
    if isinstance(source, str):
        path = Path(source)
        if not path.is_absolute() and config_dir:
            path = Path(config_dir) / path
        file = str(path)
        doc = load_yaml(path, file, ModelsConfigInvalid)  # the hardened loader: size, encoding, depth, integers
        if doc.errors:
            raise doc.errors[0]
        raw = doc.data
        if isinstance(raw, Mapping):
            raw = raw.get("rules")
        where = "rules"
    if not isinstance(raw, list):
        raise ModelsConfigInvalid("rules must be a list", file=file, path=where)
    return tuple(_rule(item, f"{where}[{index}]", file) for index, item in enumerate(raw))


def _words(text: str) -> list[str]:
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


class ScriptedClient:
    """Answers every model of one ``scripted`` provider from its rules."""

    def __init__(self, provider: ProviderConfig, rules: tuple[Rule, ...], estimator: Estimator):
        self.provider = provider
        self.rules = rules
        self.default = str(provider.options.get("default", NO_RULE_REPLY))
        self.estimator = estimator
        self.word_delay = int(provider.options.get("word_delay_ms", 0)) / 1000
        self.sleep: Callable[[float], Awaitable[None]] = anyio.sleep
        self._answers = 0

    def _assemble(self, model: ModelSpec, request: ModelRequest) -> tuple[Rule | None, StreamAssembler]:
        last_user = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
        rule = next((r for r in self.rules if r.matches(last_user)), None)
        self._answers += 1
        assembler = StreamAssembler(f"{self.provider.id}:{model.id}", request, self.estimator)
        after_tools = bool(request.messages) and request.messages[-1].role == "tool"
        if rule is not None and rule.tool_calls and not after_tools:
            for index, (name, arguments) in enumerate(rule.tool_calls):
                assembler.add_tool_delta(ToolCallDelta(index, f"scripted-{self._answers}-{index}", name, arguments))
        else:
            assembler.add_text(rule.reply if rule is not None else self.default)
        return rule, assembler

    async def generate(self, model: ModelSpec, request: ModelRequest) -> ModelResult:
        """Answer from the first matching rule."""
        rule, assembler = self._assemble(model, request)
        if rule is not None and rule.delay_ms:
            await anyio.sleep(rule.delay_ms / 1000)
        return assembler.result()

    async def stream(self, model: ModelSpec, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """The same answer as ``generate``, as word-sized text deltas (``word_delay_ms`` apart) and one delta
        per tool call."""
        result = await self.generate(model, request)
        for index, word in enumerate(_words(result.text)):
            if index and self.word_delay > 0:
                await self.sleep(self.word_delay)
            yield TextDelta(word)
        for index, call in enumerate(result.tool_calls):
            arguments = call.raw_arguments if call.parse_error else json.dumps(dict(call.arguments))
            yield ToolCallDelta(index, call.id, call.name, arguments or "")
        yield StreamDone(result)

    async def aclose(self) -> None:
        """Nothing to release."""


class ScriptedAPI(ModelAPI):
    """The ``scripted`` provider API (no network)."""

    config_schema: ClassVar[Mapping[str, Any]] = {
        "type": "object",
        "properties": {
            "rules": {"type": ["string", "array"]},
            "default": {"type": "string"},
            "word_delay_ms": {
                "type": "integer",
                "minimum": 0,
                "maximum": 10000,
                "description": "Pause between the words of a streamed answer, in milliseconds (0: none).",
            },
        },
        "additionalProperties": False,
    }
    needs_base_url: ClassVar[bool] = False

    def __init__(self, estimator: Estimator = estimate_tokens):
        self.estimator = estimator

    def create(self, provider: ProviderConfig, http: httpx.AsyncClient) -> ScriptedClient:
        """Load the provider's rules (raises ``ModelsConfigInvalid`` naming the file and rule)."""
        config_dir = provider.options.get(CONFIG_DIR_OPTION)
        return ScriptedClient(provider, self._rules(provider, str(config_dir) if config_dir else None), self.estimator)

    def check(self, provider: ProviderConfig, config_dir: Path) -> Sequence[ConfigError]:
        """The error loading the provider's rules (file or inline) gives, for ``ishiki check``."""
        try:
            self._rules(provider, str(config_dir))
        except ModelsConfigInvalid as exc:
            return [exc]
        return []

    def _rules(self, provider: ProviderConfig, config_dir: str | None) -> tuple[Rule, ...]:
        source = provider.options.get("rules", [])
        return load_rules(source, config_dir, where=f"providers.{provider.id}.rules")
