"""Activation gating: which loaded profiles may run now, which wait for services, which are skipped.

A profile's required services are its three engines, its enabled extensions, the channels its claims name and
the provider APIs its model needs. States:

- ``ready``: valid, every required service loaded, claims free;
- ``waiting``: valid but some required service is not installed or failed to load, or an account in
  ``ishiki.yaml`` of a platform it claims is invalid (``missing`` lists them; ``errors`` says why);
- ``invalid``: the profile has errors, a service's ``requires`` is not in the profile, or the tool names its
  extensions declare clash (``ishiki_host.plugins.toolnames``);
- ``skipped``: its claims overlap a profile loaded before it (directories in sorted order);
- ``disabled``: ``enable: false``.

Waiting profiles keep their claims, so nothing can take a channel from a profile that is only waiting.
Any profile may also carry ``warnings``: keys in their old camelCase spelling (``ProfileLoad.warnings``) and,
when it is not ``invalid``, what its extensions' tool-name declarations cannot show
(``toolnames.static_tool_warnings``). They never change the state.

An invalid channel account (``HostConfig.invalid_accounts``: a token whose ``${VAR}`` is not set...) is never
started, and every profile claiming its platform waits for it. Which bot an account is, and so which claims
it would serve, is known only once it runs (a Telegram bot's id comes from its token), so with several
accounts of one platform a profile cannot be told apart from the one that needs the broken account: all of
them wait until it is fixed or removed, with the account's errors (file, line, key, the variable) as reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ishiki_host.config.claims import ClaimIndex
from ishiki_host.config.services import CHANNEL_GROUP, ENGINE_GROUPS, EXTENSION_GROUP, PROVIDER_GROUP, service_name
from ishiki_host.config.validation import did_you_mean
from ishiki_host.config.yamlio import Key, format_path
from ishiki_host.errors import ConfigError, PluginNotFound, ProfileInvalid
from ishiki_host.plugins.toolnames import static_tool_problems, static_tool_warnings

if TYPE_CHECKING:
    from ishiki_host.config.models import ModelsConfig
    from ishiki_host.config.profile import ProfileLoad
    from ishiki_host.config.profile_types import Profile
    from ishiki_host.plugins.discovery import PluginRegistry

__all__ = ["InvalidAccounts", "ProfileState", "State", "activate", "required_services"]

State = Literal["ready", "waiting", "invalid", "skipped", "disabled"]


@dataclass(frozen=True, slots=True)
class ProfileState:
    """One profile directory after activation gating.

    ``profile`` is set for ``ready``, ``waiting`` and ``skipped`` profiles; ``services`` lists what it needs;
    ``warnings`` never change the state.
    """

    id: str
    state: State
    directory: Path
    file: str | None = None
    profile: Profile | None = None
    errors: tuple[ConfigError, ...] = ()
    missing: tuple[str, ...] = ()
    services: tuple[str, ...] = field(default=())
    warnings: tuple[ConfigError, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of one profile in ``ishiki check --json``."""
        return {
            "id": self.id,
            "state": self.state,
            "errors": [e.as_dict() for e in self.errors],
            "missing": list(self.missing),
            "warnings": [w.as_dict() for w in self.warnings],
        }


def required_services(profile: Profile, models: ModelsConfig) -> tuple[tuple[str, tuple[Key, ...]], ...]:
    """Every service ``profile`` needs, with the key path that asks for it, in a stable order."""
    needs: dict[str, tuple[Key, ...]] = {}
    for engine in profile.engines:
        needs.setdefault(engine.service, (engine.kind, "engine"))
    for ext in profile.extends:
        needs.setdefault(ext.service, ("extends", ext.name))
    for sid in profile.claims.by_sid:
        needs.setdefault(service_name(CHANNEL_GROUP, sid.partition(":")[0]), ("channels", sid))
    for api in models.apis_for(profile.model):
        needs.setdefault(service_name(PROVIDER_GROUP, api), ("model",))
    return tuple(needs.items())


InvalidAccounts = Mapping[tuple[str, int], Sequence[ConfigError]]
"""The errors of each invalid channel account, by ``(platform, index)`` (``HostConfig.invalid_accounts``)."""


def activate(
    loads: Sequence[ProfileLoad],
    registry: PluginRegistry,
    models: ModelsConfig,
    invalid_accounts: InvalidAccounts | None = None,
) -> tuple[ProfileState, ...]:
    """Gate each loaded profile, in the order given (sorted directory names)."""
    claims = ClaimIndex()
    return tuple(_gate(load, registry, models, claims, invalid_accounts or {}) for load in loads)


def _gate(
    load: ProfileLoad, registry: PluginRegistry, models: ModelsConfig, claims: ClaimIndex, accounts: InvalidAccounts
) -> ProfileState:
    if load.disabled:
        return ProfileState(load.id, "disabled", load.directory, load.file)
    if load.profile is None:
        return ProfileState(load.id, "invalid", load.directory, load.file, errors=load.errors, warnings=load.warnings)
    profile = load.profile
    needs = required_services(profile, models)
    services = tuple(name for name, _ in needs)
    missing = tuple(name for name in services if registry.spec(name) is None)
    errors = [_missing_error(load, name, path, registry) for name, path in needs if name in missing]
    broken = _broken_accounts(profile, accounts)
    missing += tuple(broken)
    errors += [error for problems in broken.values() for error in problems]
    unmet = [*_unmet_requires(load, needs, registry), *static_tool_problems(load, registry)]
    state: State = "waiting" if missing else "ready"
    if unmet:
        state, errors = "invalid", [*unmet, *errors]
    elif (overlap := claims.conflict(profile.claims)) is not None:
        path = ("channels", overlap.sid)
        state = "skipped"
        errors = [ProfileInvalid(overlap.describe(), file=load.file, line=load.line(path), path=format_path(path))]
    else:
        claims.add(load.id, profile.claims)
    warnings = (*load.warnings, *(() if state == "invalid" else static_tool_warnings(load, registry)))
    return ProfileState(load.id, state, load.directory, load.file, profile, tuple(errors), missing, services, warnings)


def _broken_accounts(profile: Profile, accounts: InvalidAccounts) -> dict[str, Sequence[ConfigError]]:
    """The invalid accounts of the platforms ``profile`` claims, named as ``missing`` lists them."""
    platforms = {sid.partition(":")[0] for sid in profile.claims.by_sid}
    return {
        f"channels.{platform}.accounts[{index}] (invalid in ishiki.yaml)": problems
        for (platform, index), problems in sorted(accounts.items())
        if platform in platforms
    }


def _missing_error(load: ProfileLoad, name: str, path: tuple[Key, ...], registry: PluginRegistry) -> ConfigError:
    record = registry.record(name)
    line, where = load.line(path), format_path(path)
    if record is not None:
        failure = record.as_error()
        return type(failure)(failure.message, file=load.file, line=line, path=where)
    group, _, short = name.rpartition(".")
    hint = did_you_mean(short, registry.names(group))
    message = f"needs {name}, which is not installed (no entry point '{short}' in group '{group}'){hint}"
    return PluginNotFound(message, file=load.file, line=line, path=where)


def _unmet_requires(
    load: ProfileLoad, needs: tuple[tuple[str, tuple[Key, ...]], ...], registry: PluginRegistry
) -> list[ConfigError]:
    services = {name for name, _ in needs}
    problems: list[ConfigError] = []
    for name, path in needs:
        spec = registry.spec(name)
        for needed in spec.requires if spec else ():
            if needed not in services:
                message = f"{name} requires {needed} in the same profile, which does not use it{_how_to_use(needed)}"
                problems.append(ProfileInvalid(message, file=load.file, line=load.line(path), path=format_path(path)))
    return problems


def _how_to_use(service: str) -> str:
    """`` (set toolcall.engine: narrative)``: the profile key that would bring ``service`` in, when there is one."""
    group, _, name = service.rpartition(".")
    kind = next((kind for kind, engines in ENGINE_GROUPS.items() if engines == group), None)
    if kind is not None:
        return f" (set {kind}.engine: {name})"
    return f" (enable extends.{name})" if group == EXTENSION_GROUP else ""
