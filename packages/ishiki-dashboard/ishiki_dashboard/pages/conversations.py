"""``/conversations``: the runtimes alive, and one runtime's fact log read as a conversation, live.

- ``/conversations``: each profile with its state and its runtimes alive (profile, channel account, chat).
- ``/conversations/view?key=<runtime key>``: the last ``PAGE`` entries of the runtime's fact log, oldest first:
  messages (a person's, with the sender; the persona's, with the model and tokens; wake prompts), tool calls
  with their arguments and results, turn events, usage outside turns, session boundaries, compactions,
  catalogue and narrative updates, and any other entry as its JSON. ``before=<id>`` pages back ("load
  earlier"). A key that is not a runtime address (or names no profile) is a 404 page; a key of a runtime
  that is not running says so.
- ``/conversations/stream?key=&after=<id>``: server-sent events, each one HTML fragment of the entries newer
  than the last one sent (``id:`` is the newest entry's id, so a reconnecting browser resumes after it). It
  waits with ``RuntimeLogView.wait_appended``, goes on with the runtime that takes the place of one that
  stopped, and ends when none does (with a last fragment saying so) or the host stops; a runtime not running
  answers 204, which tells the browser not to reconnect.

The log is read through ``HostPluginContext.runtime_log`` only, a read-only view of the live runtime's log that
reads the same whether the runtime runs in the host's process or in a worker of ``ishiki run --workers N`` (the
worker answers); the page never opens a fact-log file.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from ishiki_host import Entry, HttpResponse, HttpStream, Json, RuntimeKey, sse_event
from ishiki_host.errors import FactLogError

from ishiki_dashboard.app import Problem
from ishiki_dashboard.html import Safe, badge, esc, link, table, tag

if TYPE_CHECKING:
    from ishiki_host import HostPluginContext, ProfileStatus, RuntimeLogView

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["LIST_LIMIT", "PAGE", "read_since", "register", "render_entries", "render_entry"]

LIST_LIMIT = 100
"""How many runtimes of one profile the list shows (a host may run thousands: the filter narrows them)."""
PAGE = 200
"""How many entries the view shows at once (and the most one stream event carries)."""
TEXT_LIMIT = 4_000
"""Characters of one text shown before it is cut (the rest is counted)."""
_END_KINDS = {"turn.done": "ok", "turn.failed": "bad", "turn.aborted": "warn"}


def register(dash: Dashboard) -> None:
    """Mount the pages of this module."""
    view = _Conversations(dash)
    dash.page("/conversations", view.index, title="Conversations", nav="conversations")
    dash.page("/conversations/view", view.view, title="Conversation", nav="conversations")
    dash.api("/conversations/stream", view.stream, methods=("GET",))  # a 204 (not running) is no stream


# -- the runtime key ----------------------------------------------------------------------------------------


def _find(profiles: Sequence[ProfileStatus], text: str) -> tuple[RuntimeKey | None, ProfileStatus | None]:
    """The key ``text`` names and its profile, ``(None, None)`` for a bad key or one of no profile."""
    key = RuntimeKey.parse(text)
    found = next((p for p in profiles if key is not None and p.id == key.profile), None)
    return (key, found) if found is not None else (None, None)


# -- the pages --------------------------------------------------------------------------------------------


class _Conversations:
    def __init__(self, dash: Dashboard):
        self.dash = dash

    @property
    def ctx(self) -> HostPluginContext:
        return self.dash.ctx

    async def index(self, request: DashRequest) -> str:
        """Every profile, with its runtimes alive (at most ``LIST_LIMIT`` each; ``?q=`` keeps the keys that
        hold it)."""
        needle = request.query.get("q", "").strip()
        search = (
            f'<form method="get" action="{esc(self.dash.url("/conversations"))}" class="filter">'
            f'<input type="search" name="q" value="{esc(needle)}" placeholder="part of a runtime key">'
            "<button>Filter</button></form>"
        )
        sections = [self._profile(status, needle) for status in self.ctx.profiles()]
        return search + ("".join(sections) or '<p class="empty">No profiles.</p>')

    def _profile(self, status: ProfileStatus, needle: str) -> str:
        head = f"<h2>{esc(status.id)} {badge(status.state)}</h2>"
        keys = [key for key in status.runtimes if needle.lower() in str(key).lower()]
        if not keys:
            empty = "No runtime matches." if status.runtimes else "No runtime is running."
            return f'<section class="profile">{head}<p class="empty">{empty}</p></section>'
        rows = [
            [self._link(key), esc(key.mode), esc(key.sid or "(every channel)"), esc(key.channel_id or "")]
            for key in keys[:LIST_LIMIT]
        ]
        more = len(keys) - LIST_LIMIT
        note = f'<p class="muted">and {more:,} more: narrow them with the filter.</p>' if more > 0 else ""
        body = table(["Runtime", "Mode", "Account", "Chat"], rows)
        return f'<section class="profile">{head}{body}{note}</section>'

    def _link(self, key: RuntimeKey) -> Safe:
        return link(self.dash.url(f"/conversations/view?key={_quote(str(key))}"), str(key))

    async def view(self, request: DashRequest) -> str | HttpResponse:
        """One runtime's log as a conversation (see the module docstring)."""
        text = request.query.get("key", "")
        key, status = _find(self.ctx.profiles(), text)
        if key is None or status is None:
            raise Problem(404, f"There is no runtime {text!r}: a key is profile/main or profile/sid/chat.")
        log = await self.ctx.runtime_log(key)
        before = _int(request.query.get("before"))
        try:
            entries = await log.window(before=before, limit=PAGE) if log is not None else None
        except FactLogError:  # it stopped since it was asked for
            entries = None
        if entries is None:
            return _not_running(key, self.dash.url("/conversations"))
        zone = _zone(self.ctx)
        parts = [f"<h2>{esc(str(key))}</h2>", self._earlier(key, entries)]
        body = render_entries(entries, zone)
        if before is None:
            after = entries[-1].id if entries else 0
            stream = self.dash.url(f"/conversations/stream?key={_quote(str(key))}&after={after}")
            parts.append(f'<div class="log" id="log" data-sse="{esc(stream)}">{body}</div>')
        else:
            newest = self.dash.url(f"/conversations/view?key={_quote(str(key))}")
            parts.append(f'<div class="log" id="log">{body}</div><p><a href="{esc(newest)}">Newest entries</a></p>')
        return "".join(parts)

    def _earlier(self, key: RuntimeKey, entries: Sequence[Entry]) -> str:
        if not entries or entries[0].id <= 1:
            return ""
        href = self.dash.url(f"/conversations/view?key={_quote(str(key))}&before={entries[0].id}")
        return f'<p class="earlier"><a href="{esc(href)}">Load earlier entries</a></p>'

    async def stream(self, request: DashRequest) -> HttpStream | HttpResponse:
        """The entries after ``after`` (or the browser's ``Last-Event-ID``) as they are written."""
        key, _ = _find(self.ctx.profiles(), request.query.get("key", ""))
        log = await self.ctx.runtime_log(key) if key is not None else None
        if key is None or log is None:
            return HttpResponse(204)  # EventSource does not reconnect after a 204
        resume = _int(request.http.headers.get("last-event-id")) or _int(request.query.get("after")) or 0
        return HttpStream.sse(self._events(key, log, resume))

    async def _events(self, key: RuntimeKey, log: RuntimeLogView, after: int) -> AsyncIterator[str]:
        zone = _zone(self.ctx)
        while True:
            entries = await read_since(log, after, PAGE)
            if entries:
                yield sse_event(_skipped(entries[0].id, after) + render_entries(entries, zone), id=str(entries[-1].id))
                after = entries[-1].id
                continue
            await log.wait_appended(after)
            if not log.closed:
                continue
            again = await self.ctx.runtime_log(key)  # the runtime stopped: a new one may have taken its place
            if again is None:
                yield sse_event(f'<p class="notice">The runtime {esc(str(key))} stopped.</p>', event="end")
                return
            log = again


def _skipped(first: int, after: int) -> str:
    return "" if first == after + 1 or after == 0 else f'<p class="notice">{first - after - 1} entries skipped.</p>'


def _not_running(key: RuntimeKey, back: str) -> str:
    return (
        f"<h2>{esc(str(key))}</h2>"
        f'<p class="notice">This runtime is not running: it starts with the next message or beat for it. '
        f'<a href="{esc(back)}">Runtimes alive</a></p>'
    )


async def read_since(log: RuntimeLogView, after: int, limit: int) -> list[Entry]:
    """The entries of ``log`` newer than ``after`` (the newest ``limit``), none once its runtime stopped (then
    ``log.closed`` says so)."""
    if log.closed:
        return []
    try:
        return await log.since(after, limit=limit)
    except FactLogError:
        return []


# -- rendering an entry -------------------------------------------------------------------------------------


def render_entries(entries: Sequence[Entry], zone: ZoneInfo | None = None) -> str:
    """The HTML of ``entries``, in order."""
    return "".join(render_entry(entry, zone) for entry in entries)


def render_entry(entry: Entry, zone: ZoneInfo | None = None) -> str:
    """One entry as an ``<article>``: a header (time, id, turn, what it is) and its body."""
    kind, title, body = _describe(entry)
    when = datetime.fromtimestamp(entry.ts, zone or ZoneInfo("UTC"))
    turn = f' <span class="turn">turn {entry.turn}</span>' if entry.turn is not None else ""
    return (
        f'<article class="entry entry-{esc(kind)}" id="entry-{entry.id}" data-id="{entry.id}">'
        f'<header><time datetime="{when.isoformat()}">{when:%Y-%m-%d %H:%M:%S}</time> '
        f'<span class="id">#{entry.id}</span>{turn} <strong>{title}</strong></header>{body}</article>'
    )


def _describe(entry: Entry) -> tuple[str, str, str]:
    """``(css kind, title html, body html)`` by the entry's type."""
    render = _RENDERERS.get(entry.type)
    if render is None:
        return "other", esc(entry.type), _json(entry.data)
    return render(entry.data)


def _message(data: Mapping[str, Json]) -> tuple[str, str, str]:
    role = str(data.get("role", ""))
    text = _text(_parts_text(data.get("parts")))
    if role == "user":
        if data.get("wake"):
            return "wake", "Wake prompt", text
        source = data.get("source")
        if isinstance(source, Mapping):
            return "user", esc(_sender(source)), text + _source_line(source)
        return "user", "User", text
    if role == "assistant":
        calls = "".join(_tool_call(call) for call in _list(data.get("tool_calls")))
        return "assistant", "Assistant" + _model_line(data), text + calls
    if role == "tool":
        name = esc(str(data.get("tool_name", "tool")))
        failed = data.get("is_error") is True
        title = f"Result of {name}" + (f" {badge('error')}" if failed else "")
        call = esc(str(data.get("tool_call_id", "")))
        return ("tool-error" if failed else "tool"), title, f'<p class="call-ref">call {call}</p>{text}'
    return "message", esc(role.capitalize() or "Message"), text + _extra(data, {"role", "parts"})


def _sender(source: Mapping[str, Json]) -> str:
    user = source.get("user")
    if isinstance(user, Mapping):
        name, uid = user.get("name"), user.get("id")
        return f"{name} ({source.get('platform')}:{uid})" if name and name != uid else f"{source.get('platform')}:{uid}"
    return "Someone"


def _source_line(source: Mapping[str, Json]) -> str:
    where = f"{source.get('platform')}:{source.get('selfId')} {source.get('channelId')}"
    return f'<p class="source">in {esc(where)}, message {esc(str(source.get("messageId", "")))}</p>'


def _model_line(data: Mapping[str, Json]) -> str:
    bits = [str(data["model"])] if data.get("model") else []
    usage = data.get("usage")
    if isinstance(usage, Mapping):
        bits.append(f"{usage.get('input_tokens', 0)} in / {usage.get('output_tokens', 0)} out tokens")
    return f' <span class="model">{esc(", ".join(bits))}</span>' if bits else ""


def _tool_call(call: Json) -> str:
    if not isinstance(call, Mapping):
        return ""
    name, cid = esc(str(call.get("name", "?"))), esc(str(call.get("id", "")))
    arguments = call.get("raw_arguments") if "raw_arguments" in call else call.get("arguments")
    error = f'<p class="error">{esc(str(call["parse_error"]))}</p>' if call.get("parse_error") else ""
    return (
        f'<div class="tool-call" data-call="{cid}"><p>Calls <code>{name}</code> <span class="call-ref">{cid}</span>'
        f"</p>{_json(arguments)}{error}</div>"
    )


def _event(data: Mapping[str, Json]) -> tuple[str, str, str]:
    name = str(data.get("name", "event"))
    tone = _END_KINDS.get(name)
    title = esc(name) if tone is None else f"{esc(name)} {_tone(str(data.get('reason', '')), tone)}"
    if name == "turn.start":
        return "turn", title, _kv({"priority": data.get("priority"), "triggers": _triggers(data.get("triggers"))})
    if name == "turn.failed":
        return "turn-failed", title, _kv({k: data.get(k) for k in ("error", "kind", "message", "steps")})
    return ("turn" if name.startswith("turn.") else "event"), title, _extra(data, {"name", "reason"})


def _triggers(value: Json) -> str:
    return "; ".join(
        ", ".join(f"{k}: {v}" for k, v in item.items()) for item in _list(value) if isinstance(item, Mapping)
    )


def _usage(data: Mapping[str, Json]) -> tuple[str, str, str]:
    purpose = esc(str(data.get("purpose", "")))
    return "usage", f"Model call outside a turn: {purpose}", _kv(dict(data))


def _session(data: Mapping[str, Json]) -> tuple[str, str, str]:
    reason = esc(str(data.get("reason", "")))
    summary = data.get("summary")
    body = f'<p class="summary">{_text(str(summary))}</p>' if summary else ""
    return "session", f"New session ({reason})", body + _extra(data, {"reason", "summary"})


def _compact(data: Mapping[str, Json]) -> tuple[str, str, str]:
    body = _text(str(data.get("summary", "")))
    return "compact", f"Compaction: stands for the entries up to #{esc(str(data.get('upto', '?')))}", body


def _catalog(data: Mapping[str, Json]) -> tuple[str, str, str]:
    shown = {k: ", ".join(str(x) for x in _list(data.get(k))) for k in ("added", "listed", "unlisted")}
    query = {"query": data["query"]} if data.get("query") else {}
    return "catalog", "Tool catalogue", _kv({**query, **{k: v for k, v in shown.items() if v}})


def _narrative(data: Mapping[str, Json]) -> tuple[str, str, str]:
    fields = {k: data.get(k) for k in ("situation", "intent", "upto", "reason")}
    fields["threads"] = "; ".join(str(x) for x in _list(data.get("threads")))
    return "narrative", "Story update", _kv(fields)


def _custom(data: Mapping[str, Json]) -> tuple[str, str, str]:
    return (
        "custom",
        f"Record: {esc(str(data.get('kind', 'custom')))}",
        _json({k: v for k, v in data.items() if k != "kind"}),
    )


_RENDERERS: Mapping[str, Callable[[Mapping[str, Json]], tuple[str, str, str]]] = {
    "message": _message,
    "event": _event,
    "usage": _usage,
    "session": _session,
    "compact": _compact,
    "catalog": _catalog,
    "narrative": _narrative,
    "custom": _custom,
}


# -- small helpers ----------------------------------------------------------------------------------------


def _parts_text(parts: Json) -> str:
    out = []
    for part in _list(parts):
        if isinstance(part, Mapping):
            if part.get("type") == "text":
                out.append(str(part.get("text", "")))
            elif part.get("type") == "image":
                out.append(f"[image {part.get('url', '')}]")
    return "\n".join(out)


def _text(text: str) -> str:
    """A paragraph of ``text``, escaped, line breaks kept, cut at ``TEXT_LIMIT``."""
    if not text:
        return ""
    cut = ""
    if len(text) > TEXT_LIMIT:
        cut = f' <span class="cut">({len(text) - TEXT_LIMIT} more characters)</span>'
        text = text[:TEXT_LIMIT] + "…"
    return f'<p class="text">{esc(text).replace(chr(10), "<br>")}{cut}</p>'


def _json(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) > TEXT_LIMIT:
        text = text[:TEXT_LIMIT] + f"… ({len(text) - TEXT_LIMIT} more characters)"
    return f'<pre class="json">{esc(text)}</pre>'


def _kv(fields: Mapping[str, object]) -> str:
    items = [(k, v) for k, v in fields.items() if v not in (None, "", [], {})]
    if not items:
        return ""
    cells = "".join(f"<dt>{esc(k)}</dt><dd>{esc(_plain(v))}</dd>" for k, v in items)
    return f'<dl class="fields">{cells}</dl>'


def _plain(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _extra(data: Mapping[str, Json], known: set[str]) -> str:
    rest = {k: v for k, v in data.items() if k not in known}
    return _kv(rest)


def _list(value: Json) -> list[Json]:
    return list(value) if isinstance(value, list) else []


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _tone(text: str, tone: str) -> str:
    return tag("span", text, cls=f"badge badge-{tone}")


def _zone(ctx: HostPluginContext) -> ZoneInfo:
    try:
        return ZoneInfo(ctx.services.timezone)
    except (ValueError, KeyError):
        return ZoneInfo("UTC")
