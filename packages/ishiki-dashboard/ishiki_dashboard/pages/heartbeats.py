"""``/heartbeats``: the host's beats, their last runs, and the forms that make, edit, pause and delete them.

Everything goes through ``HostPluginContext.heartbeats`` (``HeartbeatAdmin``); without a memory database it is
``None`` and the page says so.

- ``/heartbeats``: every beat (id, type, schedule and time zone, target, next and last run, paused, managed
  and the file it comes from), kept current by ``/heartbeats/stream`` (the table first, then again when it
  changed: looked at every ``REFRESH_SECONDS`` and at once after a change made here), and the form that makes
  a user beat.
- ``/heartbeats/beat?id=``: one beat, its last runs, and for a user beat the form that edits it and the
  buttons that pause, resume and delete it. A managed beat is read-only: it names its file.
- ``POST /api/heartbeats`` (the form's fields as JSON: a new beat), ``/api/heartbeats/update`` (a beat's new
  definition), ``/api/heartbeats/pause``, ``/resume`` and ``/delete`` (``{id}``): ``BeatInvalid`` answers
  400 ``{"error", "field"}`` (shown beside the field), ``BeatRefused`` 409 with the reason. Every change is
  audited.

A target is written ``profile sid channel`` (``ana web:dashboard private:admin``); an empty one makes a
background beat whose output is only recorded.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import anyio
from ishiki_host import BeatSpec, BeatTarget, BeatType, HttpResponse, HttpStream, Json, sse_event
from ishiki_host.errors import BeatInvalid, BeatRefused

from ishiki_dashboard.app import Problem, json_response
from ishiki_dashboard.html import Safe, badge, button_post, esc, form_field, link, table, tag

if TYPE_CHECKING:
    from ishiki_host import Beat, BeatRun, HeartbeatAdmin, HostPluginContext

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["CREATE", "REFRESH_SECONDS", "parse_spec", "register"]

CREATE = "/api/heartbeats"
"""The API that makes a beat; ``/update``, ``/pause``, ``/resume`` and ``/delete`` below it change one."""

REFRESH_SECONDS = 2.0
"""How often the list's stream looks for changes (next and last runs move on their own)."""
_BY_ID = ("pause", "resume", "delete")
_TYPES: Mapping[str, BeatType] = {"reminder": "reminder", "task": "task"}
TYPES = (("reminder", "reminder: says the text"), ("task", "task: does what the text asks"))
TRUSTS = (("", "the runtime's own level"), ("untrusted", "untrusted"), ("trusted", "trusted"), ("owner", "owner"))


def register(dash: Dashboard) -> None:
    """Mount the pages of this module."""
    pages = _Heartbeats(dash)
    dash.page("/heartbeats", pages.index, title="Heartbeats", nav="heartbeats")
    dash.page("/heartbeats/beat", pages.beat, title="Heartbeat", nav="heartbeats")
    dash.api("/heartbeats/stream", pages.stream, methods=("GET",))  # a 204 (no database) is no stream
    dash.api(CREATE, pages.create, methods=("POST",))
    for action in ("update", "pause", "resume", "delete"):
        dash.api(f"{CREATE}/{action}", getattr(pages, action), methods=("POST",))


def parse_spec(fields: Mapping[str, Json]) -> BeatSpec:
    """A ``BeatSpec`` from the form's fields; ``BeatInvalid`` naming the field that cannot be one."""
    target = _target(str(fields.get("target") or "").strip())
    kind = _TYPES.get(str(fields.get("type") or "reminder"))
    if kind is None:
        raise BeatInvalid("type", f"type {fields.get('type')!r} is not reminder or task")
    trust = str(fields.get("trust") or "") or None
    if trust not in (None, "untrusted", "trusted", "owner"):
        raise BeatInvalid("trust", f"trust {trust!r} is not untrusted, trusted or owner")
    return BeatSpec(
        id=str(fields.get("id") or "").strip(),
        text=str(fields.get("text") or ""),
        type=kind,
        cron=str(fields.get("cron") or "").strip(),
        timezone=str(fields.get("timezone") or "").strip() or None,
        target=target,
        recurring=_flag(fields.get("recurring", True)),
        trust=trust,  # type: ignore[arg-type]  # checked just above
    )


def _target(text: str) -> BeatTarget | None:
    if not text:
        return None
    parts = text.split()
    if len(parts) != 3:
        raise BeatInvalid("target", "write a target as: profile sid channel (ana web:dashboard private:admin)")
    return BeatTarget(*parts)


def _flag(value: Json) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("on", "true", "1", "yes"))


class _Heartbeats:
    def __init__(self, dash: Dashboard):
        self.dash = dash
        self._changed = anyio.Event()  # set (and replaced) by each change made here: open lists redraw at once

    @property
    def ctx(self) -> HostPluginContext:
        return self.dash.ctx

    @property
    def zone(self) -> str:
        return self.ctx.services.timezone

    # -- pages ------------------------------------------------------------------------------------------

    async def index(self, request: DashRequest) -> str:
        """The beats, live, and the form for a new one."""
        admin = self.ctx.heartbeats
        if admin is None:
            return self._no_database()
        listing = await self._table(admin)
        stream = self.dash.url("/heartbeats/stream")
        return (
            f'<div id="beats" data-sse="{esc(stream)}">{listing}</div>'
            f"<section><h2>New beat</h2>{self._form('create', None)}</section>"
        )

    async def beat(self, request: DashRequest) -> str:
        """One beat with its runs, and its form and buttons when it is a user beat."""
        admin = self.ctx.heartbeats
        if admin is None:
            return self._no_database()
        beat_id = request.query.get("id", "")
        beat = await admin.get(beat_id)
        if beat is None:
            raise Problem(404, f"There is no beat {beat_id!r}.")
        runs = await admin.runs(beat.id, limit=20)
        parts = [f"<h2>{esc(beat.id)} {self._state(admin, beat)}</h2>", self._facts(admin, beat)]
        parts.append(f"<section><h2>Last runs</h2>{self._runs(runs)}</section>")
        if beat.managed:
            source = admin.source(beat) or "its file"
            parts.append(f'<p class="notice">This beat is managed: change it in <code>{esc(source)}</code>.</p>')
        else:
            parts.append(f"<section><h2>Actions</h2>{self._buttons(admin, beat)}</section>")
            parts.append(f"<section><h2>Edit</h2>{self._form('update', beat)}</section>")
        return "".join(parts)

    async def stream(self, request: DashRequest) -> HttpStream | HttpResponse:
        """The list of beats again whenever it changed (looked at every ``REFRESH_SECONDS``)."""
        admin = self.ctx.heartbeats
        if admin is None:
            return HttpResponse(204)
        return HttpStream.sse(self._changes(admin))

    async def _changes(self, admin: HeartbeatAdmin) -> AsyncIterator[str]:
        # The first look is always sent: what changed between the page's drawing and the stream's start (a
        # beat that fired meanwhile) would otherwise stay unseen until the next change.
        shown = ""
        while True:
            changed = self._changed  # taken before the look: a change made during it wakes the nap at once
            listing = await self._table(admin)
            digest = hashlib.sha256(listing.encode()).hexdigest()
            if digest != shown:
                yield sse_event(f'<div id="beats-table">{listing}</div>', event="replace")
                shown = digest
            await self._nap(changed)

    async def _nap(self, changed: anyio.Event) -> None:
        """Until ``REFRESH_SECONDS`` passed (the scheduler moves runs on its own) or the dashboard changed a
        beat, whichever comes first."""
        async with anyio.create_task_group() as tg:

            async def until(event: Callable[[], Awaitable[object]]) -> None:
                await event()
                tg.cancel_scope.cancel()

            tg.start_soon(until, lambda: self.ctx.clock.sleep(REFRESH_SECONDS))
            tg.start_soon(until, changed.wait)

    def _no_database(self) -> str:
        why = self.ctx.services.memory_error or "the host runs without data/memory.db"
        return f'<p class="notice">This host has no memory database, so it keeps no heartbeats ({esc(why)}).</p>'

    # -- the API ----------------------------------------------------------------------------------------

    async def create(self, request: DashRequest) -> HttpResponse:
        """Make a user beat from the form's fields."""
        return await self._change(request, "create")

    async def update(self, request: DashRequest) -> HttpResponse:
        """Replace a user beat's definition."""
        return await self._change(request, "update")

    async def pause(self, request: DashRequest) -> HttpResponse:
        """Pause a user beat (``{id}``)."""
        return await self._change(request, "pause")

    async def resume(self, request: DashRequest) -> HttpResponse:
        """Resume a paused user beat (``{id}``)."""
        return await self._change(request, "resume")

    async def delete(self, request: DashRequest) -> HttpResponse:
        """Delete a user beat (``{id}``)."""
        return await self._change(request, "delete")

    async def _change(self, request: DashRequest, action: str) -> HttpResponse:
        admin = self.ctx.heartbeats
        if admin is None:
            return json_response({"error": "this host has no memory database"}, status=409)
        fields = _fields(request)
        try:
            beat_id = await self._apply(admin, action, fields)
        except BeatInvalid as exc:
            return json_response({"error": str(exc), "field": exc.field}, status=400)
        except BeatRefused as exc:
            return json_response({"error": str(exc)}, status=409)
        self.dash.audit(f"heartbeat.{action}", {"id": beat_id, **({} if action in _BY_ID else dict(fields))})
        self._changed.set()
        self._changed = anyio.Event()
        then = self.dash.url("/heartbeats") if action in ("create", "delete") else self._beat_url(beat_id)
        return json_response({"ok": True, "id": beat_id, "location": then})

    async def _apply(self, admin: HeartbeatAdmin, action: str, fields: Mapping[str, Json]) -> str:
        if action in ("create", "update"):
            spec = parse_spec(fields)
            if action == "create":
                return (await admin.create(spec, created_by=f"dashboard:{self.dash.user}")).id
            return (await admin.update(spec)).id
        beat_id = str(fields.get("id") or "")
        if action == "delete":
            await admin.delete(beat_id)
        else:
            await (admin.pause(beat_id) if action == "pause" else admin.resume(beat_id))
        return beat_id

    # -- pieces -----------------------------------------------------------------------------------------

    async def _table(self, admin: HeartbeatAdmin) -> str:
        beats = await admin.beats()
        rows = [self._row(admin, beat) for beat in beats]
        headers = ["Id", "Type", "Schedule", "Target", "Next run", "Last run", "State", "Source"]
        return str(table(headers, rows, empty="no beats yet"))

    def _row(self, admin: HeartbeatAdmin, beat: Beat) -> list[object]:
        tz = beat.timezone or self.zone
        schedule = f"{beat.cron} ({tz})" + ("" if beat.recurring else ", once")
        last = tag("span", _when(beat.last_run, tz), data_field="last-run")
        nxt = tag("span", _when(beat.next_run, tz), data_field="next-run")
        source = admin.source(beat)
        origin = tag("code", source) if source else "made here" + (f" by {beat.created_by}" if beat.created_by else "")
        return [link(self._beat_url(beat.id), beat.id), beat.type, schedule, _target_text(beat.target), nxt, last,
                self._state(admin, beat), origin]  # fmt: skip

    def _state(self, admin: HeartbeatAdmin, beat: Beat) -> Safe:
        state = badge("paused" if admin.paused(beat) else "enabled")
        return Safe(state + (" " + badge("managed") if beat.managed else ""))

    def _facts(self, admin: HeartbeatAdmin, beat: Beat) -> Safe:
        tz = beat.timezone or self.zone
        rows: list[Sequence[object]] = [
            ("Type", beat.type),
            ("Schedule", f"{beat.cron} in {tz}" + ("" if beat.recurring else ", once")),
            ("Target", _target_text(beat.target)),
            ("Text", beat.text),
            ("Trust", beat.trust or "the runtime's own level"),
            ("Next run", _when(beat.next_run, tz)),
            ("Last run", _when(beat.last_run, tz)),
            ("Made by", beat.created_by or (admin.source(beat) or "")),
        ]
        return table(["", ""], rows)

    def _runs(self, runs: Sequence[BeatRun]) -> Safe:
        rows = [
            (_when(r.started_at, self.zone), _when(r.finished_at, self.zone), badge(r.outcome), r.output or "")
            for r in runs
        ]
        return table(["Started", "Finished", "Outcome", "Output"], rows, empty="it has not run yet")

    def _buttons(self, admin: HeartbeatAdmin, beat: Beat) -> Safe:
        body = {"id": beat.id}
        toggle = "resume" if admin.paused(beat) else "pause"
        buttons = [
            button_post(self.dash.url(f"{CREATE}/{toggle}"), toggle.capitalize(), body=body),
            button_post(
                self.dash.url(f"{CREATE}/delete"),
                "Delete",
                body=body,
                confirm=f"Delete the beat {beat.id}?",
                then=self.dash.url("/heartbeats"),
                cls="danger",
            ),
        ]
        return Safe(" ".join(buttons) + tag("span", "", cls="field-error", data_error_for="id"))

    def _form(self, action: str, beat: Beat | None) -> Safe:
        spec: Any = beat.spec if beat is not None else None
        editing = beat is not None
        fields = [
            form_field("id", "Id", value=spec.id if editing else "", required=True, placeholder="stretch"),
            form_field("text", "Text", value=spec.text if editing else "", required=True),
            form_field("type", "Type", value=spec.type if editing else "reminder", options=TYPES),
            form_field("cron", "Schedule (cron)", value=spec.cron if editing else "", required=True,
                       placeholder="0 9 * * 1-5", hint="minute hour day month weekday, in the time zone below"),
            form_field("timezone", "Time zone", value=(spec.timezone or "") if editing else "",
                       placeholder=self.zone, hint=f"empty: the host's ({self.zone})"),
            form_field("target", "Target", value=_target_field(spec.target) if editing else "",
                       placeholder="ana web:dashboard private:admin",
                       hint="profile sid channel; empty: a background beat whose output is only recorded"),
            form_field("recurring", "Repeats", value="on" if not editing or spec.recurring else "off",
                       options=(("on", "at every slot"), ("off", "once, at the next slot"))),
            form_field("trust", "Runs at most at", value=(spec.trust or "") if editing else "", options=TRUSTS),
        ]  # fmt: skip
        if editing:
            hidden = f'<input type="hidden" name="id" value="{esc(spec.id)}">'
            fields[0] = Safe(hidden + tag("span", "", cls="field-error", data_error_for="id"))
        form_id = "beat-form" if action == "create" else "beat-edit"
        label = "Create" if action == "create" else "Save"
        body = "".join(fields) + f'<button type="submit">{label}</button>'
        url = self.dash.url(CREATE if action == "create" else f"{CREATE}/{action}")
        return Safe(f'<form id="{form_id}" data-form="beat" data-api="{esc(url)}" method="post">{body}</form>')

    def _beat_url(self, beat_id: str) -> str:
        from urllib.parse import quote

        return self.dash.url(f"/heartbeats/beat?id={quote(beat_id, safe='')}")


def _fields(request: DashRequest) -> Mapping[str, Json]:
    """The body's fields: JSON (what the dashboard's script posts) or a urlencoded form."""
    if "json" not in request.http.headers.get("content-type", "json"):
        return dict(request.form())
    body = request.json()
    return body if isinstance(body, Mapping) else {}


def _when(ts: float | None, tz: str) -> str:
    if ts is None:
        return "never"
    try:
        zone = ZoneInfo(tz)
    except (ValueError, KeyError):
        zone = ZoneInfo("UTC")
    return f"{datetime.fromtimestamp(ts, zone):%Y-%m-%d %H:%M}"


def _target_text(target: BeatTarget | None) -> str:
    return "background (output recorded)" if target is None else f"{target.profile} in {target.sid} {target.channel}"


def _target_field(target: BeatTarget | None) -> str:
    return "" if target is None else f"{target.profile} {target.sid} {target.channel}"
