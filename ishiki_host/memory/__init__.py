"""The built-in ``memory`` and ``skills`` extensions (docs/sessions.md), and what they are made of.

- ``extension``: ``ishiki.ext.memory``, long-term memory in every turn's prompt, a memory of each exchange;
- ``overflow``: what each ``session.summarizer`` mode does, compact-and-retry, the safety valve;
- ``retrieval``: the long-term memory section of a prompt;
- ``reminders``: a ``reminder`` memory with a time becomes a one-shot beat in its chat, confirmed by a notice;
- ``skills`` / ``skills_extension``: ``skills/<name>/SKILL.md``, the ``skill://`` scheme, ``ishiki.ext.skills``.

The database they read and write is ``ishiki_host.store``; sessions and the summarizer are
``ishiki_host.sessions``.
"""

from ishiki_host.memory.overflow import OverflowRecovery, SessionPolicy
from ishiki_host.memory.retrieval import RetrievalSettings, memory_section
from ishiki_host.memory.skills import SkillScheme, SkillsWatcher, profile_skills, skills_section

__all__ = [
    "OverflowRecovery",
    "RetrievalSettings",
    "SessionPolicy",
    "SkillScheme",
    "SkillsWatcher",
    "memory_section",
    "profile_skills",
    "skills_section",
]
