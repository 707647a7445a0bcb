"""``ishiki run``'s hint when no model answers: what to configure, said once on stderr.

A fresh ``ishiki init`` points its one provider at a local server that may not run; every turn then fails (the
sender gets the profile's ``failure_reply``, the console shows the reason) and the operator is told once what
to set. ``ModelHint`` is a gateway call listener. When every member of a model reference has failed and no
model call has answered since the start, it prints one block: for each member that failed in a way the
configuration can fix (``unavailable``, ``auth``, ``bad_request``), the provider and its address, the key of
models.yaml to change and the environment variables that key reads, with their state (unset, empty, set).
The variables come from models.yaml as ``ishiki run`` read it at the start (``raw_providers``), and are named
only while expanding them still gives the value in use (an edited file may have dropped them).

After one call answered it never speaks: a model that stops answering later is for the failover notices and
the log. Rate limits and context overflows are not configuration; probes (``ishiki models --probe``) run in
another process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ishiki_host.config.envvars import expand_vars, variables
from ishiki_host.config.models_loader import MODELS_FILES
from ishiki_host.config.yamlio import load_yaml
from ishiki_host.errors import ConfigError, ModelsConfigInvalid

if TYPE_CHECKING:
    from ishiki_host.config.models import ProviderConfig
    from ishiki_host.gateway.gateway import Gateway, ModelCallRecord

__all__ = ["ModelHint", "RawProvider", "raw_providers"]

_FIXABLE = ("unavailable", "auth", "bad_request")


@dataclass(frozen=True, slots=True)
class RawProvider:
    """A provider's ``base_url``, ``api_key`` and model ids as written in models.yaml (``${VAR}`` unexpanded;
    the old spellings ``baseUrl`` and ``apiKey`` are read too)."""

    base_url: str | None = None
    api_key: str | None = None
    model_ids: tuple[str, ...] = ()


def raw_providers(root: Path) -> dict[str, RawProvider]:
    """Each provider of ``root``'s models.yaml as written; empty when the file cannot be read."""
    path = next((root / name for name in MODELS_FILES if (root / name).is_file()), None)
    if path is None:
        return {}
    try:
        data = load_yaml(path, str(path), ModelsConfigInvalid).data
    except ConfigError:
        return {}
    providers = data.get("providers") if isinstance(data, dict) else None
    return {str(pid): _raw(raw) for pid, raw in providers.items()} if isinstance(providers, dict) else {}


def _raw(raw: Any) -> RawProvider:
    if not isinstance(raw, dict):
        return RawProvider()
    models = raw.get("models")
    listed = models if isinstance(models, list) else []
    ids = tuple(m["id"] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str))
    written = {key: raw.get(key, raw.get(old)) for key, old in (("base_url", "baseUrl"), ("api_key", "apiKey"))}
    texts = {key: value if isinstance(value, str) else None for key, value in written.items()}
    return RawProvider(texts["base_url"], texts["api_key"], ids)


class ModelHint:
    """The gateway call listener of ``ishiki run`` (see the module docstring)."""

    def __init__(
        self,
        gateway: Callable[[], Gateway],
        raw: Mapping[str, RawProvider],
        *,
        env: Mapping[str, str] | None = None,
        out: IO[str] | None = None,
    ):
        self._gateway = gateway
        self._raw = raw
        self._env = os.environ if env is None else env
        self._out = out
        self._failed: dict[str, str] = {}  # member -> error kind
        self._done = False

    def __call__(self, record: ModelCallRecord) -> None:
        if self._done or record.ref.startswith("probe:"):
            return
        if record.error_kind is None:
            self._done = True  # a model answers: whatever fails later is not a missing configuration
            return
        self._failed[record.member] = record.error_kind
        gateway = self._gateway()
        members = gateway.config.resolve(record.ref) or (record.member,)
        if any(member not in self._failed for member in members):
            return  # another member may still answer for the group
        lines = [line for member in members if (line := self._member_line(gateway, member)) is not None]
        if lines:
            self._done = True
            self._print(gateway, lines)

    def _print(self, gateway: Gateway, lines: list[str]) -> None:
        where = gateway.config.file or "models.yaml"
        text = f"ishiki run: no model answered; configure one in {where}:\n"
        text += "".join(f"  {line}\n" for line in lines)
        text += f"  (`ishiki models {Path(where).parent} --probe` calls each model once and shows what it answers)\n"
        out = self._out or sys.stderr
        try:
            out.write(text)
            out.flush()
        except (OSError, ValueError):
            pass  # stderr is gone: nobody to tell

    def _member_line(self, gateway: Gateway, member: str) -> str | None:
        kind = self._failed[member]
        pid, _, model_id = member.partition(":")
        provider = gateway.config.providers.get(pid)
        if kind not in _FIXABLE or provider is None:
            return None
        place = _place(provider)
        problem = _provider_error(gateway, pid)
        if problem:
            return f"{member}: {place} cannot start: {problem} (providers.{pid})"
        raw = self._raw.get(pid, RawProvider())
        if kind == "unavailable":
            fix = self._fix(f"providers.{pid}.base_url", raw.base_url, provider.base_url)
            return f"{member}: {place} did not answer (unavailable): start the server there, or {fix}"
        if kind == "auth":
            fix = self._fix(f"providers.{pid}.api_key", raw.api_key, provider.api_key)
            return f"{member}: {place} refused the credentials (auth): {fix}"
        fix = self._model_fix(provider, raw, model_id)
        return f"{member}: {place} refused the request (bad_request): check that it serves '{model_id}', or {fix}"

    def _model_fix(self, provider: ProviderConfig, raw: RawProvider, model_id: str) -> str:
        index = next((i for i, m in enumerate(provider.models) if m.id == model_id), 0)
        written = raw.model_ids[index] if index < len(raw.model_ids) else None
        return self._fix(f"providers.{provider.id}.models[{index}].id", written, model_id)

    def _fix(self, key: str, written: str | None, value: str | None) -> str:
        """``set VAR (unset), which KEY reads`` when the key's variables still give its value, else ``edit KEY``."""
        names = variables(written) if written else []
        if not names or expand_vars(written or "", self._env)[0] != (value or ""):
            return f"edit {key}"
        states = ", ".join(f"{name} ({_state(name, self._env)})" for name in names)
        return f"set {states}, which {key} reads"


def _state(name: str, env: Mapping[str, str]) -> str:
    if name not in env:
        return "unset"
    return "set" if env[name] else "empty"


def _provider_error(gateway: Gateway, pid: str) -> str | None:
    """Why a provider could not be built (its API plugin is missing, a bad option), if it could not."""
    provider = gateway.status()["providers"]
    entry = provider.get(pid) if isinstance(provider, dict) else None
    error = entry.get("error") if isinstance(entry, dict) else None
    return error if isinstance(error, str) and error else None


def _place(provider: ProviderConfig) -> str:
    return f"provider '{provider.id}'" + (f" at {provider.base_url}" if provider.base_url else "")
