"""The memories page (``/memories``): search (``q``), filter by ``type`` and ``profile``, view one
(``/memories/view?id=``), delete one (``POST /memories/delete``, audited), and the sessions of the runtimes
shown with their summaries. ``/api/memories`` is the JSON twin of the list.

It reads ``services.memory`` (the host's ``MemoryStore``) as the operator, so at the ``owner`` trust level:
every memory, whoever may read it in a chat.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, get_args

from ishiki_host import HttpResponse, Memory, MemoryType
from ishiki_host.errors import StoreError

from ishiki_dashboard.app import Problem, Titled, json_response
from ishiki_dashboard.html import Safe, button_post, esc, form_field, link, section, table, tag

if TYPE_CHECKING:
    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["LIMIT", "register"]

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
    return search + str(section(f"{len(found)} memories", memories)) + str(section("Sessions", sessions))


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
