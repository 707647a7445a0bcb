"""The memory database (``data/memory.db``): SQLite in WAL mode, versioned migrations, one repository per
table group. All SQL of the host lives in this package; ``MemoryStore`` is the database and its
repositories as one async object.

Constants live beside what they bound: ``store.db.MEMORY_DB_NAME``, ``store.migrations.SCHEMA_VERSION``,
``store.repos.memory_types.MAX_LIST`` / ``MAX_SEARCH``, ``store.repos.memory_search.CANDIDATE_BUDGET``.
"""

from ishiki_host.store.db import Database, memory_db_files, memory_db_path
from ishiki_host.store.memory_store import MemoryStore
from ishiki_host.store.repos.beat_types import Beat, BeatRun, BeatSpec, BeatSyncReport, BeatTarget, BeatType
from ishiki_host.store.repos.heartbeats import HeartbeatRepo, RunOutcome
from ishiki_host.store.repos.images import ImageRecord, ImagesRepo
from ishiki_host.store.repos.memories import MemoriesRepo
from ishiki_host.store.repos.memory_types import Memory, MemoryDraft, MemoryHit, MemoryType
from ishiki_host.store.repos.plugin_settings import PluginKind, PluginSetting, PluginSettingsRepo
from ishiki_host.store.repos.sessions import Session, SessionsRepo
from ishiki_host.store.repos.skills import LearnedSkill, LearnedSkillsRepo, SkillFile, SkillSyncReport

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
    "PluginKind",
    "PluginSetting",
    "PluginSettingsRepo",
    "RunOutcome",
    "Session",
    "SessionsRepo",
    "SkillFile",
    "SkillSyncReport",
    "memory_db_files",
    "memory_db_path",
]
