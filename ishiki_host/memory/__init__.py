"""The memory database (``data/memory.db``): SQLite in WAL mode, versioned migrations, one repository per
table group. All SQL of the host lives in this package.

Built on it (docs/sessions.md): ``sessions`` (``SessionManager``: /clear, /compact, carried messages),
``summarizer`` (memories of turns, session summaries), ``overflow`` (the modes, compact-and-retry, the
safety valve), ``retrieval`` (the long-term memory section of a prompt), ``skills`` (SKILL.md files, the
``skill://`` scheme), ``transcript`` (entries as text for the summarizer).

Constants live beside what they bound: ``memory.db.MEMORY_DB_NAME``, ``memory.migrations.SCHEMA_VERSION``,
``memory.repos.memory_types.MAX_LIST`` / ``MAX_SEARCH``, ``memory.repos.memory_search.CANDIDATE_BUDGET``.
"""

from ishiki_host.memory.db import Database, memory_db_files, memory_db_path
from ishiki_host.memory.overflow import OverflowRecovery, SessionPolicy, compact_if_needed
from ishiki_host.memory.repos.beat_types import Beat, BeatRun, BeatSpec, BeatSyncReport, BeatTarget, BeatType
from ishiki_host.memory.repos.heartbeats import HeartbeatRepo, RunOutcome
from ishiki_host.memory.repos.images import ImageRecord, ImagesRepo
from ishiki_host.memory.repos.memories import MemoriesRepo
from ishiki_host.memory.repos.memory_types import Memory, MemoryDraft, MemoryHit, MemoryType
from ishiki_host.memory.repos.plugin_settings import PluginKind, PluginSetting, PluginSettingsRepo
from ishiki_host.memory.repos.sessions import Session, SessionsRepo
from ishiki_host.memory.repos.skills import LearnedSkill, LearnedSkillsRepo, SkillFile, SkillSyncReport
from ishiki_host.memory.retrieval import RetrievalSettings, memory_section
from ishiki_host.memory.sessions import SessionChange, SessionManager, SessionSize
from ishiki_host.memory.skills import SkillScheme, SkillsWatcher, profile_skills, skills_section
from ishiki_host.memory.store import MemoryStore
from ishiki_host.memory.summarizer import Summarizer, needs_compaction, remember_turn

__all__ = [
    "Beat",
    "BeatRun",
    "BeatSpec",
    "BeatSyncReport",
    "BeatTarget",
    "BeatType",
    "Database",
    "HeartbeatRepo",
    "ImageRecord",
    "ImagesRepo",
    "LearnedSkill",
    "LearnedSkillsRepo",
    "MemoriesRepo",
    "Memory",
    "MemoryDraft",
    "MemoryHit",
    "MemoryStore",
    "MemoryType",
    "OverflowRecovery",
    "PluginKind",
    "PluginSetting",
    "PluginSettingsRepo",
    "RetrievalSettings",
    "RunOutcome",
    "Session",
    "SessionChange",
    "SessionManager",
    "SessionPolicy",
    "SessionSize",
    "SessionsRepo",
    "SkillFile",
    "SkillScheme",
    "SkillSyncReport",
    "SkillsWatcher",
    "Summarizer",
    "compact_if_needed",
    "memory_db_files",
    "memory_db_path",
    "memory_section",
    "needs_compaction",
    "profile_skills",
    "remember_turn",
    "skills_section",
]
