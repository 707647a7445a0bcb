"""The memories page (``/memories``): search (``q``), filter by ``type`` and ``profile``, view one
(``/memories/view?id=``), delete one (``POST /memories/delete``, audited), and the sessions of the runtimes
shown with their summaries. ``/api/memories`` is the JSON twin of the list.

The people section lists the profile each persona keeps of a person or group chat (``memory.people``); one
is shown at ``/memories/person?profile=&subject=``, rewritten there (``POST /memories/person/edit``: its trust
level is kept) or deleted (``POST /memories/person/delete``), both audited. ``/api/people`` lists them as JSON.

It reads ``services.memory`` (the host's ``MemoryStore``) as the operator, so at the ``owner`` trust level:
every memory, whoever may read it in a chat.
"""

from __future__ import annotations

import datetime
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, get_args

from ishiki_host import HttpResponse, Memory, MemoryType, PersonProfile
from ishiki_host.errors import StoreError

from ishiki_dashboard.app import Problem, Titled, json_response, redirect
from ishiki_dashboard.html import Safe, button_post, csrf_field, esc, form_field, link, section, table, tag

if TYPE_CHECKING:
    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["LIMIT", "people", "register", "register_people", "render_person"]

LIMIT = 50
"""Memories listed at most (per profile)."""
TYPES: tuple[str, ...] = get_args(MemoryType)


def register(dash: Dashboard) -> None:
    """``/memories``, ``/memories/view``, ``/api/memories`` and ``POST /memories/delete``."""

    async def page(req: DashRequest) -> str:
        return await render(dash, req)

    async def view(req: DashRequest) -> Titled:
        return await render_one(dash, _id(req.query.get("id")))

    async def api(req: DashRequest) -> HttpResponse:
        found = await find(dash, **_filters(dash, req))
        return json_response({"memories": [_json(m) for m in found]})

    async def delete(req: DashRequest) -> HttpResponse:
        memory_id = _id(req.form().get("id"))
        memory = await dash.memory().memories.get(memory_id)
        if memory is None or not await dash.memory().memories.delete(memory_id):
            raise Problem(404, f"no memory {memory_id}", field="id")
        dash.audit("memory.delete", {"id": memory_id, "profile": memory.profile, "type": memory.type})
        return json_response({"deleted": memory_id, "location": dash.url("/memories")})

    dash.page("/memories", page, title="Memories", nav="memories")
    dash.page("/memories/view", view, title="Memory", nav="memories")
    dash.api("/api/memories", api)
    dash.form("/memories/delete", delete)
    register_people(dash)


def register_people(dash: Dashboard) -> None:
    """``/memories/person``, ``/api/people``, ``POST /memories/person/edit`` and ``/memories/person/delete``."""

    async def person(req: DashRequest) -> Titled:
        return await render_person(dash, req, *_subject(dash, req.query))

    async def api(req: DashRequest) -> HttpResponse:
        return json_response({"people": [_person_json(p) for p in await people(dash)]})

    async def edit(req: DashRequest) -> HttpResponse:
        fields = req.form()
        profile, subject = _subject(dash, fields)
        content = fields.get("content", "").strip()
        if not content:
            raise Problem(400, "the profile cannot be empty", field="content")
        try:
            edited = await dash.memory().people.edit(profile, subject, content)
        except StoreError as exc:
            raise Problem(400, str(exc), field="content") from exc
        if edited is None:
            raise Problem(404, f"{profile} keeps no profile of {subject}")
        dash.audit("person.edit", {"profile": profile, "subject": subject})
        return redirect(_person_url(dash, profile, subject))

    async def delete(req: DashRequest) -> HttpResponse:
        profile, subject = _subject(dash, req.form())
        if not await dash.memory().people.delete(profile, subject):
            raise Problem(404, f"{profile} keeps no profile of {subject}")
        dash.audit("person.delete", {"profile": profile, "subject": subject})
        return json_response({"deleted": subject, "location": dash.url("/memories")})

    dash.page("/memories/person", person, title="Person", nav="memories")
    dash.api("/api/people", api)
    dash.form("/memories/person/edit", edit)
    dash.form("/memories/person/delete", delete)


def _subject(dash: Dashboard, fields: Mapping[str, str]) -> tuple[str, str]:
    profile, subject = fields.get("profile", ""), fields.get("subject", "")
    if profile not in [p.id for p in dash.ctx.profiles()]:
        raise Problem(400, f"no profile {profile!r}", field="profile")
    if not subject:
        raise Problem(400, "subject is the person (platform:userId) or the group chat", field="subject")
    return profile, subject


async def people(dash: Dashboard) -> list[PersonProfile]:
    """The profiles every persona keeps, most recently updated first (per persona)."""
    store = dash.memory()
    found: list[PersonProfile] = []
    for profile in dash.ctx.profiles():
        found += await store.people.latest(profile.id, limit=LIMIT)
    return found


def _person_url(dash: Dashboard, profile: str, subject: str) -> str:
    query = urllib.parse.urlencode({"profile": profile, "subject": subject})
    return f"{dash.url('/memories/person')}?{query}"


def _person_json(p: PersonProfile) -> dict[str, Any]:
    return {"profile": p.profile, "subject": p.subject, "kind": p.kind, "name": p.name, "content": p.content,
            "min_trust": p.min_trust, "edited_by": p.edited_by, "updated_at": p.updated_at}  # fmt: skip


async def _people_section(dash: Dashboard) -> Safe:
    rows = [
        (link(_person_url(dash, p.profile, p.subject), p.label), p.profile, p.subject, p.min_trust,
         _when(p.updated_at), p.edited_by, _short(p.content))
        for p in await people(dash)
    ]  # fmt: skip
    headers = ["Person", "Profile", "Subject", "Shown at", "Updated", "Written by", "Profile"]
    return section("People", table(headers, rows, empty="no profile kept (the memory extension's `people`)"))


async def render_person(dash: Dashboard, req: DashRequest, profile: str, subject: str) -> Titled:
    """One person's profile, the form that rewrites it, and its delete button."""
    person = await dash.memory().people.get(profile, subject)
    if person is None:
        raise Problem(404, f"{profile} keeps no profile of {subject}")
    url = dash.url("/memories/person/edit")
    hint = f"Shown to turns at the {person.min_trust} level and above where {person.label} speaks."
    form = (
        f'<form method="post" action="{esc(url)}" data-api="{esc(url)}">{csrf_field(req.csrf)}'
        f'<input type="hidden" name="profile" value="{esc(profile)}">'
        f'<input type="hidden" name="subject" value="{esc(subject)}">'
        f"{form_field('content', 'Profile', value=person.content, kind='textarea', required=True, hint=hint)}"
        '<button type="submit">Save</button></form>'
    )
    remove = button_post(dash.url("/memories/person/delete"), "Delete", body={"profile": profile, "subject": subject},
                         confirm=f"Delete what {profile} keeps about {person.label}?", cls="danger")  # fmt: skip
    facts = table(["Field", "Value"], [(k, v) for k, v in _person_json(person).items() if k != "content"])
    return Titled(f"{person.label} ({profile})", f"{form}{facts}{remove}")


def _id(raw: str | None) -> int:
    try:
        return int(raw or "")
    except ValueError as exc:
        raise Problem(400, "id is a memory's number", field="id") from exc


def _filters(dash: Dashboard, req: DashRequest) -> dict[str, Any]:
    kind = req.query.get("type") or None
    if kind is not None and kind not in TYPES:
        raise Problem(400, f"type is one of {', '.join(TYPES)}", field="type")
    profiles = [p.id for p in dash.ctx.profiles()]
    profile = req.query.get("profile") or None
    if profile is not None and profile not in profiles:
        raise Problem(400, f"no profile {profile!r}", field="profile")
    return {"text": req.query.get("q", "").strip(), "kind": kind, "profiles": [profile] if profile else profiles}


async def find(dash: Dashboard, *, text: str, kind: str | None, profiles: list[str]) -> list[Memory]:
    """The memories matching ``text`` (all, newest first, without) of ``kind`` in ``profiles``."""
    store = dash.memory()
    types: Any = (kind,) if kind else TYPES
    found: list[Memory] = []
    for profile in profiles:
        if text:
            hits = await store.memories.search(profile, text, trust="owner", types=types, limit=LIMIT)
            found += [hit.memory for hit in hits]
        else:
            found += await store.memories.latest(profile, trust="owner", types=types, count=LIMIT)
    return found


def _when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M")


def _json(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id,
        "type": m.type,
        "content": m.content,
        "profile": m.profile,
        "runtime_key": m.runtime_key,
        "session_id": m.session_id,
        "importance": m.importance,
        "min_trust": m.min_trust,
        "created_at": m.created_at,
    }


def _delete_button(dash: Dashboard, memory_id: int) -> Safe:
    return button_post(
        dash.url("/memories/delete"),
        "Delete",
        body={"id": str(memory_id)},
        confirm=f"Delete memory {memory_id} for good?",
        cls="danger",
    )


def _short(text: str, size: int = 200) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


async def _sessions(dash: Dashboard, keys: list[str]) -> Safe:
    store = dash.memory()
    rows = []
    for key in sorted(set(keys))[:20]:
        for s in await store.sessions.recent(key, limit=5):
            ended = _when(s.ended_at) or "open"
            rows.append((s.id, key, _when(s.created_at), ended, s.end_reason or "", _short(s.summary or "")))
    return table(["Session", "Runtime", "Started", "Ended", "Why it ended", "Summary"], rows, empty="no session")


async def render(dash: Dashboard, req: DashRequest) -> str:
    """The list's body: the filter form, the memories, the sessions."""
    filters = _filters(dash, req)
    found = await find(dash, **filters)
    chosen_profile = req.query.get("profile", "")
    profiles = [("", "all"), *[(p.id, p.id) for p in dash.ctx.profiles()]]
    search = (
        f'<form method="get" action="{esc(dash.url("/memories"))}" class="inline toolbar">'
        f"{form_field('q', 'Search', value=filters['text'])}"
        f"{form_field('type', 'Type', value=filters['kind'] or '', options=[('', 'any'), *[(t, t) for t in TYPES]])}"
        f"{form_field('profile', 'Profile', value=chosen_profile, options=profiles)}"
        '<button type="submit">Search</button></form>'
    )
    rows = [
        (
            link(f"{dash.url('/memories/view')}?id={m.id}", m.id),
            m.profile,
            m.type,
            _short(m.content),
            _when(m.created_at),
            _delete_button(dash, m.id),
        )
        for m in found
    ]
    memories = table(["#", "Profile", "Type", "Content", "Created", ""], rows, empty="no memory matches")
    live = [str(k) for p in dash.ctx.profiles() for k in p.runtimes]
    sessions = await _sessions(dash, live + [m.runtime_key for m in found])
    people_part = await _people_section(dash)
    return (
        search
        + str(section(f"{len(found)} memories", memories))
        + str(people_part)
        + str(section("Sessions", sessions))
    )


async def render_one(dash: Dashboard, memory_id: int) -> Titled:
    """One memory, its session's summary, and its delete button."""
    store = dash.memory()
    memory = await store.memories.get(memory_id)
    if memory is None:
        raise Problem(404, f"no memory {memory_id}")
    facts = table(
        ["Field", "Value"],
        [(k, v) for k, v in _json(memory).items() if k != "content"] + [("created", _when(memory.created_at))],
    )
    summary: Safe = esc("")
    if memory.session_id is not None:
        try:
            session = await store.sessions.get(memory.session_id)
        except StoreError:  # the session row is gone: the memory outlived it
            session = None
        if session is not None and session.summary:
            summary = section(f"Session {session.id}'s summary", tag("p", session.summary))
    body = f"{tag('p', memory.content, cls='content')}{facts}{summary}{_delete_button(dash, memory.id)}"
    return Titled(f"Memory {memory.id}", body)
