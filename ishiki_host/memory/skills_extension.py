"""The built-in ``skills`` extension (entry point ``ishiki.ext.skills``): learned skills, on by default.

A profile turns it off with ``extends: {skills: {enable: false}}`` and chooses its skills with
``extends: {skills: {config: {enabled: [brew-tea, haiku]}}}`` (default ``"*"``: every skill). The host syncs
``skills/<name>/SKILL.md`` into the ``learned_skills`` table at start and whenever the files change
(``SkillsWatcher``, on the host's reload tick), so a turn always lists the current skills. Per runtime:

- ``ishiki_attach``: serves ``skill://<name>`` (``SkillScheme``) at trust ``trusted``;
- ``ishiki_instructions``: the list of the profile's skills (name and description), for turns at
  ``trusted`` or above; untrusted turns get neither the list nor the bodies;
- ``ishiki_status``: how many skills the profile has.

Without a memory database (the host could not open it) there is no skill table: the extension says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ishiki_host.memory.skills import SKILL_TRUST, SkillScheme, enabled_names, profile_skills, skills_section
from ishiki_host.plugins.base import Extension, PluginConfig
from ishiki_host.plugins.hookspecs import hookimpl

if TYPE_CHECKING:
    from ishiki_host.plugins.runtime_api import RuntimeContext
    from ishiki_host.store.memory_store import MemoryStore

__all__ = ["SKILLS_SCHEMA", "SkillsExtension", "SkillsInstance"]

SKILLS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "enabled": {
            "description": 'The skills this profile may use: "*" (every skill in skills/) or a list of names.',
            "default": "*",
            "type": ["string", "array"],
            "pattern": r"^\*$",
            "x-error": 'must be "*" (every skill) or a list of skill names',
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
        },
    },
}


class SkillsInstance:
    """The skills extension on one runtime (see the module docstring)."""

    def __init__(self, runtime: RuntimeContext, config: PluginConfig):
        self._rt = runtime
        self.enabled = enabled_names(config)
        self.store: MemoryStore | None = None

    @hookimpl
    def ishiki_attach(self, runtime: RuntimeContext) -> Callable[[], None] | None:
        """Serve ``skill://`` from the host's skill table."""
        self.store = runtime.services.memory
        if self.store is None:
            runtime.logger.warning("skills: no memory database is open, so no skills are served")
            return None
        if self.enabled != "*":
            runtime.spawn(self._check_names, name="skills: check the enabled names")
        scheme = SkillScheme(runtime.config_dir, self.store, enabled=self.enabled)
        deregister: Callable[[], None] = runtime.resources.register("skill", scheme, owner="skills", trust=SKILL_TRUST)
        return deregister

    async def _check_names(self) -> None:
        if self.store is None or self.enabled == "*":
            return
        known = {skill.name for skill in await self.store.skills.all()}
        for name in sorted(set(self.enabled) - known):
            self._rt.logger.warning("skills: %s enables %r, which is no skill in skills/ (yet)", self._rt.key, name)

    @hookimpl
    async def ishiki_instructions(self, runtime: RuntimeContext) -> str | None:
        """The profile's skills, for turns trusted enough to use them."""
        trust = runtime.turn_state.trust
        if self.store is None or trust == "untrusted":
            return None
        return skills_section(await profile_skills(self.store, self.enabled), trust)

    @hookimpl
    async def ishiki_status(self, runtime: RuntimeContext) -> Sequence[str]:
        """``skills: 2 (brew-tea, haiku)``."""
        if self.store is None:
            return ["skills: unavailable (no memory database)"]
        names = [skill.name for skill in await profile_skills(self.store, self.enabled)]
        return [f"skills: {len(names)}" + (f" ({', '.join(names)})" if names else "")]


class SkillsExtension(Extension):
    """Learned skills from ``skills/<name>/SKILL.md``, on by default: listed for trusted turns, read through
    ``skill://<name>``."""

    tool_names: ClassVar[tuple[str, ...] | None] = ()  # no tools of its own (skills are read by ``read``)

    default_enabled: ClassVar[bool] = True
    config_schema: ClassVar[Mapping[str, Any]] = SKILLS_SCHEMA

    def create(self, ctx: RuntimeContext, config: PluginConfig) -> SkillsInstance:
        """The skills instance of one runtime."""
        return SkillsInstance(ctx, config)
