"""A picture of each person: the profiles the summarizer keeps, and the prompt section that shows them.

With ``people: true`` in the memory extension's config, after each exchange the persona answered, the
summarizer's model updates one short profile per sender of the exchange (name, preferences, ongoing matters,
what they asked to be reminded of) and, in a group chat, one of the group (``PeopleKeeper``): one background
call each, given the profile so far and the exchange, answering the whole new profile (or ``UNCHANGED``). A
profile is stored at the exchange's trust level, or at the level it had if that is higher
(``store.people.keep``).

``people_section`` shows the profiles of the senders of a turn's new messages, and of its group chat, that the
turn's level may read: a person's profile is in the prompt only for turns where that person speaks, never
because someone else mentions them. The owner reads and rewrites profiles with ``/memory about @name``
(``ishiki_host.commands.session``) and on the dashboard's memory page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import anyio

from ishiki_host.core.messages import Message
from ishiki_host.core.model import ModelRequest
from ishiki_host.core.subjects import entry_chat, entry_sender
from ishiki_host.errors import IshikiError
from ishiki_host.sessions.transcript import render_transcript
from ishiki_host.store.repos.people import MAX_PROFILE_CHARS

if TYPE_CHECKING:
    from ishiki_host.core.entries import Entry
    from ishiki_host.core.model import LanguageModel
    from ishiki_host.core.tools import TrustLevel
    from ishiki_host.store.memory_store import MemoryStore
    from ishiki_host.store.repos.people import PersonProfile, SubjectKind

__all__ = ["PEOPLE_HEADER", "PEOPLE_SYSTEM", "UNCHANGED", "PeopleKeeper", "people_section", "subjects_speaking"]

logger = logging.getLogger("ishiki_host.memory")

UNCHANGED = "UNCHANGED"
PEOPLE_HEADER = (
    "About the people speaking now (your notes; they may be outdated, and are never to be quoted to others):"
)
PEOPLE_SYSTEM = (
    "You keep a short profile of {who} that a chat persona talks with. You get the profile so far (maybe "
    "empty) and the latest exchange. Answer with the whole updated profile, at most {chars} characters, as "
    "plain lines: 'Name: ...', 'Preferences: ...', 'Ongoing: ...', 'Asked to be reminded of: ...' (leave out a "
    "line with nothing in it). Keep what is still true, add what the exchange tells about {them}, drop what it "
    "says is no longer true; nothing about anyone else. If nothing changes, answer exactly " + UNCHANGED + "."
)


def subjects_speaking(entries: Iterable[Entry]) -> list[tuple[str, SubjectKind, str | None]]:
    """``(subject, kind, name)`` of the senders of ``entries``' user messages, then of their group chats."""
    people: dict[str, str | None] = {}
    groups: dict[str, None] = {}
    for entry in entries:
        if entry.type != "message" or entry.data.get("role") != "user" or entry.data.get("wake"):
            continue
        sender, chat = entry_sender(entry), entry_chat(entry)
        if sender is not None:
            people[sender] = people.get(sender) or _name(entry)
        if chat is not None and " group:" in chat:
            groups[chat] = None
    found: list[tuple[str, SubjectKind, str | None]] = [(s, "sender", n) for s, n in people.items()]
    return found + [(chat, "chat", None) for chat in groups]


def _name(entry: Entry) -> str | None:
    source = entry.data.get("source")
    user = source.get("user") if isinstance(source, dict) else None
    name = user.get("name") if isinstance(user, dict) else None
    return name if isinstance(name, str) and name.strip() else None


async def people_section(
    store: MemoryStore, inbound: Sequence[Entry], *, profile: str, trust: TrustLevel
) -> str | None:
    """The profiles of the people (and group) speaking in ``inbound`` that ``trust`` may read; ``None`` for none."""
    subjects = [subject for subject, _, _ in subjects_speaking(inbound)]
    shown = await store.people.shown(profile, subjects, trust=trust)
    if not shown:
        return None
    lines = [f"- {_label(p)}: {' / '.join(line.strip() for line in p.content.splitlines() if line.strip())}"
             for p in shown]  # fmt: skip
    return "\n".join([PEOPLE_HEADER, *lines])


def _label(person: PersonProfile) -> str:
    return f"this group ({person.subject})" if person.kind == "chat" else f"{person.label} ({person.subject})"


class PeopleKeeper:
    """Updates the profiles of an exchange's people with ``model`` (see the module docstring)."""

    def __init__(self, model: LanguageModel, store: MemoryStore, *, timeout: float = 180.0):
        self.model = model
        self.store = store
        self.timeout = timeout

    async def keep(self, profile: str, entries: list[Entry], *, trust: TrustLevel) -> int:
        """Update the profile of each person (and group) of ``entries``; how many changed. Never raises for
        the model or the store (logged): a profile not updated now is updated by a later exchange."""
        transcript = render_transcript(entries, budget_tokens=6_000)
        if not transcript.strip():
            return 0
        changed = 0
        for subject, kind, name in subjects_speaking(entries):
            try:
                changed += await self._keep_one(profile, subject, kind, name, transcript, trust)
            except (IshikiError, TimeoutError) as exc:
                logger.warning("memory: the profile of %s was not updated: %s", subject, exc)
        return changed

    async def _keep_one(
        self, profile: str, subject: str, kind: SubjectKind, name: str | None, transcript: str, trust: TrustLevel
    ) -> bool:
        old = await self.store.people.get(profile, subject)
        who = "one group chat" if kind == "chat" else "one person"
        them = "the group" if kind == "chat" else f"{name or subject} ({subject}) themselves"
        system = PEOPLE_SYSTEM.format(who=who, chars=MAX_PROFILE_CHARS // 2, them=them)
        user = f"<profile>\n{old.content if old else ''}\n</profile>\n<exchange>\n{transcript}\n</exchange>"
        request = ModelRequest((Message.system(system), Message.user(user)), max_tokens=400, temperature=0.2,
                               priority="background")  # fmt: skip
        with anyio.fail_after(self.timeout):
            text = (await self.model.generate(request)).text.strip()
        if not text or text == UNCHANGED:
            return False
        await self.store.people.keep(profile, subject, kind, text, name=name, trust=trust)
        return True
