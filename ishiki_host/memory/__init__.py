"""The memory database (``data/memory.db``): SQLite in WAL mode, versioned migrations, one repository per
table group. All SQL of the host lives in this package.

Constants live beside what they bound: ``memory.db.MEMORY_DB_NAME``, ``memory.migrations.SCHEMA_VERSION``,
``memory.repos.memory_types.MAX_LIST`` / ``MAX_SEARCH``, ``memory.repos.memory_search.CANDIDATE_BUDGET``.
"""

from ishiki_host.memory.db import Database, memory_db_files, memory_db_path
from ishiki_host.memory.repos.beat_types import Beat, BeatRun, BeatSpec, BeatSyncReport, BeatTarget, BeatType
from ishiki_host.memory.repos.heartbeats import HeartbeatRepo, RunOutcome
from ishiki_host.memory.repos.images import ImageRecord, ImagesRepo
from ishiki_host.memory.repos.memories import MemoriesRepo
from ishiki_host.memory.repos.memory_types import Memory, MemoryDraft, MemoryHit, MemoryType
from ishiki_host.memory.repos.plugin_settings import PluginKind, PluginSetting, PluginSettingsRepo
from ishiki_host.memory.repos.sessions import Session, SessionsRepo
from ishiki_host.memory.repos.skills import LearnedSkill, LearnedSkillsRepo, SkillFile, SkillSyncReport
from ishiki_host.memory.store import MemoryStore

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
