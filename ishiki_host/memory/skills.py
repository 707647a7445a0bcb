"""Learned skills: ``skills/<name>/SKILL.md`` in the config directory, synced into ``learned_skills``.

A skill is a folder holding ``SKILL.md``: YAML front matter with ``name`` and ``description``, then the body
(the instructions the model reads when it needs them)::

    ---
    name: brew-tea
    description: How to brew green, black and oolong tea, with times and temperatures.
    ---
    # Brewing tea
    ...

The folder name must equal ``name``. The front matter is read by the host's hardened YAML loader (nesting,
alias, integer and size limits; ``ishiki_host.config.yamlio``). A SKILL.md that cannot be read, without front
matter, with malformed YAML, without a name or description, or whose name is not its folder's is skipped
with a ``SkillInvalid`` naming the file and line (``SkillScan.errors``, logged); the other skills still load,
and ``ishiki check`` reports the same errors. ``scan_skills`` reads the folder, ``sync_skills`` mirrors it
into the table (adds, edits, removals, in one transaction), and ``SkillsWatcher.poll()`` does that only when
a file changed (the host calls it at start and on its reload rhythm).

Which skills a profile gets is the skills extension's config: ``enabled: "*"`` (every skill, the default) or
a list of names. The prompt lists them (``skills_section``: name and description) and the model reads a body
through ``read("skill://<name>")`` (``SkillScheme``). Untrusted turns get neither the list nor the bodies.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ishiki_host.config.yamlio import YamlDocument, parse_yaml, read_text, shorten
from ishiki_host.core.tools import trust_allows
from ishiki_host.errors import ResourceError, SkillInvalid
from ishiki_host.resources.center import Resource, ResourceRequest
from ishiki_host.store.repos.skills import SkillFile, SkillSyncReport

if TYPE_CHECKING:
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.skills import LearnedSkill

__all__ = [
    "MAX_SKILL_BYTES",
    "SKILLS_DIR",
    "SKILL_FILE",
    "SKILL_TRUST",
    "SkillScan",
    "SkillScheme",
    "SkillsSync",
    "SkillsWatcher",
    "enabled_names",
    "parse_skill",
    "profile_skills",
    "scan_skills",
    "skills_section",
    "sync_skills",
]

logger = logging.getLogger(__name__)

SKILLS_DIR = "skills"
SKILL_FILE = "SKILL.md"
SKILL_TRUST: TrustLevel = "trusted"  # untrusted turns get no skills, neither listed nor read
MAX_SKILL_BYTES = 256 * 1024
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
SKILLS_HEADER = (
    "Skills: instructions for particular tasks. When one fits what you are asked, read it first with "
    'read("skill://<name>"), then follow it.'
)


@dataclass(frozen=True, slots=True)
class SkillScan:
    """The valid skills found on disk, and the error of each one that was skipped."""

    files: tuple[SkillFile, ...] = ()
    errors: tuple[SkillInvalid, ...] = ()

    @property
    def problems(self) -> tuple[str, ...]:
        """One log line per skipped skill: its error, then ``; skipped``."""
        return tuple(f"{error.describe()}; skipped" for error in self.errors)


@dataclass(frozen=True, slots=True)
class SkillsSync:
    """A scan and what syncing it changed in the table."""

    scan: SkillScan
    report: SkillSyncReport = field(default_factory=SkillSyncReport)

    @property
    def changed(self) -> bool:
        """Whether a skill was added, edited or removed."""
        return self.report.changed


def parse_skill(text: str, *, where: str) -> tuple[dict[str, Any], str]:
    """The front matter (a mapping) and the body of a SKILL.md; ``SkillInvalid`` naming ``where`` if unusable."""
    doc, body = _front_matter(text, where)
    assert isinstance(doc.data, dict)  # _front_matter refuses anything else
    return doc.data, body


def _front_matter(text: str, where: str) -> tuple[YamlDocument, str]:
    """The front matter, read by the hardened YAML loader (depth, alias and integer limits), and the body."""
    text = text.removeprefix("\ufeff")
    match = _FRONT.match(text)
    if match is None:
        raise SkillInvalid("no front matter (the file must start with a '---' line, then YAML, then '---')", file=where)
    doc = parse_yaml("\n" + match.group(1), where, SkillInvalid)  # "\n" for the '---' line: lines are the file's
    if doc.errors:
        raise doc.errors[0]  # a duplicate key: which of the two was meant is not for the host to guess
    if not isinstance(doc.data, dict):
        raise SkillInvalid("the front matter must be a mapping with name and description", file=where, line=2)
    for key in ("name", "description"):
        value = doc.data.get(key)
        if not isinstance(value, str) or not value.strip():
            line = doc.line((key,)) if key in doc.data else 2
            raise SkillInvalid(f"front matter key {key!r} must be a non-empty string", file=where, line=line, path=key)
    return doc, text[match.end() :]


def _read_one(folder: Path, config_dir: Path, where: str) -> SkillFile:
    path = folder / SKILL_FILE
    text = read_text(path, where, SkillInvalid, MAX_SKILL_BYTES)
    doc, _ = _front_matter(text, where)
    assert isinstance(doc.data, dict)
    name = str(doc.data["name"]).strip()

    def bad(message: str) -> SkillInvalid:
        return SkillInvalid(message, file=where, line=doc.line(("name",)))

    if name != folder.name:
        raise bad(f"name {shorten(name)!r} differs from its folder {_shown(folder.name)!r}; they must be equal")
    if not _NAME.fullmatch(name):
        raise bad(f"name {shorten(name)!r} must be lowercase letters, digits, '.', '-' or '_' (at most 64)")
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return SkillFile(name, " ".join(str(doc.data["description"]).split()), digest, str(path.relative_to(config_dir)))


def _shown(name: str) -> str:
    """A file name as text: the bytes of a name that is not UTF-8 shown as ``\\xNN`` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def scan_skills(config_dir: Path) -> SkillScan:
    """Read every ``skills/<name>/SKILL.md`` under ``config_dir`` (blocking: run it in a worker thread).

    Never raises: a folder that cannot be listed, or a skill that cannot be used, is a ``SkillInvalid`` in the
    scan; every other skill still loads.
    """
    root = Path(config_dir) / SKILLS_DIR
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return SkillScan()
    except OSError as exc:
        return SkillScan(errors=(SkillInvalid(f"cannot list the folder: {exc.strerror or exc}", file=SKILLS_DIR),))
    files: list[SkillFile] = []
    errors: list[SkillInvalid] = []
    for folder in folders:
        where = f"{SKILLS_DIR}/{_shown(folder.name)}"
        if not (folder / SKILL_FILE).is_file():
            errors.append(SkillInvalid(f"no {SKILL_FILE}", file=where))
            continue
        try:
            files.append(_read_one(folder, Path(config_dir), f"{where}/{SKILL_FILE}"))
        except SkillInvalid as exc:
            errors.append(exc)
    return SkillScan(tuple(files), tuple(errors))


async def sync_skills(config_dir: Path, store: MemoryStore) -> SkillsSync:
    """Scan the skills folder and make the table equal to it; problems are logged and returned."""
    scan = await anyio.to_thread.run_sync(scan_skills, Path(config_dir))
    for problem in scan.problems:
        logger.warning("%s", problem)
    report = await store.skills.sync(scan.files)
    if report.changed:
        logger.info(
            "skills: %d added, %d edited, %d removed", len(report.added), len(report.updated), len(report.removed)
        )
    return SkillsSync(scan, report)


def _signature(config_dir: Path) -> tuple[tuple[str, int, int, int], ...] | None:
    root = Path(config_dir) / SKILLS_DIR
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return None
    found = []
    for name in names:
        try:
            st = os.stat(root / name / SKILL_FILE)
        except OSError:
            found.append((name, 0, 0, 0))  # a folder without SKILL.md still counts: adding one is a change
            continue
        found.append((name, st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(found)


class SkillsWatcher:
    """Syncs the skills folder when something in it changed since the last ``poll()``.

    The first poll always syncs (the start-up sync). A change is a SKILL.md added, removed, or with another
    modification time, size or inode (editors that write a new file and rename it change the inode).
    """

    def __init__(self, config_dir: Path, store: MemoryStore, *, on_change: Callable[[], None] | None = None):
        self.config_dir = Path(config_dir)
        self._store = store
        self._on_change = on_change
        self._seen: tuple[tuple[str, int, int, int], ...] | bool | None = False  # False: never looked

    async def poll(self, *, force: bool = False) -> SkillsSync | None:
        """Sync if the folder changed (or ``force``); ``None`` when there was nothing to do."""
        signature = await anyio.to_thread.run_sync(_signature, self.config_dir)
        if not force and signature == self._seen:
            return None
        self._seen = signature
        synced = await sync_skills(self.config_dir, self._store)
        if synced.changed and self._on_change is not None:
            self._on_change()
        return synced


def enabled_names(config: Mapping[str, Any]) -> Literal["*"] | frozenset[str]:
    """The skills a profile enables, from the skills extension's config (``enabled``: ``"*"`` or names)."""
    value = config.get("enabled", "*")
    if value == "*":
        return "*"
    if isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    raise ValueError(f"skills: enabled must be '*' or a list of skill names, not {value!r}")


async def profile_skills(store: MemoryStore, enabled: Literal["*"] | Collection[str]) -> list[LearnedSkill]:
    """The skills a profile may use: in the table, switched on there, and enabled for the profile."""
    return [s for s in await store.skills.all() if s.enabled and (enabled == "*" or s.name in enabled)]


def skills_section(skills: Sequence[LearnedSkill], trust: TrustLevel) -> str | None:
    """The prompt section listing ``skills`` (name and description); ``None`` for none or an untrusted turn."""
    if not trust_allows(trust, SKILL_TRUST) or not skills:
        return None
    return "\n".join([SKILLS_HEADER, *(f"- {s.name}: {s.description}" for s in skills)])


class SkillScheme:
    """The ``skill://`` scheme of one runtime: ``skill://<name>`` is that skill's body (markdown).

    Register it at ``SKILL_TRUST`` (``trusted``): an untrusted turn reads nothing here (the center refuses
    it, and so does the handler, should it be registered more openly). ``skill://`` lists the skills the
    profile may use. Bodies are read from disk at each read, so an edit shows at once.
    """

    views: tuple[str, ...] = ()

    def __init__(self, config_dir: Path, store: MemoryStore, *, enabled: Literal["*"] | Collection[str] = "*"):
        self.config_dir = Path(config_dir)
        self._store = store
        self._enabled = enabled

    async def read(self, request: ResourceRequest) -> Resource:
        """The body of ``skill://<name>``, or the list for ``skill://``."""
        if not request.allows(SKILL_TRUST):
            raise ResourceError("forbidden", "skills are not available in this conversation")
        url = request.url
        skills = await profile_skills(self._store, self._enabled)
        if not url.segments:
            listing = "\n".join(f"skill://{s.name} - {s.description}" for s in skills) or "(no skills)"
            return Resource(text=listing, media_type="text/plain", meta={"count": len(skills)})
        if url.path_segments:
            raise ResourceError("not_found", f"{url.bare()}: a skill is skill://<name>, without a path")
        skill = next((s for s in skills if s.name == url.authority), None)
        if skill is None:
            known = ", ".join(s.name for s in skills) or "none"
            raise ResourceError("not_found", f"no skill {url.authority!r}; skills available: {known}")
        meta = {"name": skill.name, "description": skill.description}
        if not request.wants_content:
            return Resource(media_type="text/markdown", name=SKILL_FILE, meta=meta)
        body = await anyio.to_thread.run_sync(self._body, skill.path)
        return Resource(text=body, media_type="text/markdown", name=SKILL_FILE, meta=meta)

    def _body(self, relative: str) -> str:
        path = self.config_dir / relative
        try:
            _, body = parse_skill(read_text(path, relative, SkillInvalid, MAX_SKILL_BYTES), where=relative)
        except SkillInvalid as exc:
            raise ResourceError("not_found", f"{relative} cannot be read now: {exc.message}") from None
        return body.lstrip("\n")
