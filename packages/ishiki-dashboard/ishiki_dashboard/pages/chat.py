"""``/chat``: talk to a persona from the dashboard, through the ``web`` channel (``ishiki_dashboard.webchat``).

- ``/chat?account=<id>``: the profiles' ``web`` accounts to choose from, the chat of the dashboard's user
  (``private:<user>`` of ``web:<id>``), and a message box (a ``form[data-api]`` posting ``{account, text}``).
  When the profile does not list ``web:<user>`` in ``trust.owners``, a notice says the persona treats the
  user as anyone else.
- ``POST /chat/say`` (JSON ``{account, text}``): the words go into the host through the account's connection
  (``WebHub.say``); 400 with the field at fault, 409 when the account is not running or no profile answers.
  The tool calls of the turn it starts are read from the runtime's fact log as they are written and published
  to the chat, then the turn's end (through ``HostPluginContext.runtime_log``: the same in one process and
  under ``ishiki run --workers N``, where the runtime's worker answers).
- ``/chat/stream?account=<id>``: server-sent events of the chat as HTML fragments: the person's words (the
  echo), the typing indicator, each message the host sends, each tool call with its result, the turn's end.

The reply appears as the model writes it: each ``draft`` of the web channel is an ``upsert`` event, a fragment
keyed by the draft's id (``data-key``) that the page puts in place of the element with that key, or appends;
the final message is an ``upsert`` of the same key (the draft becomes the message, once). A draft taken back
because the step called tools is a ``remove`` event (its data is the key); one cut short by a failed or
aborted turn stays as it was, followed by a note saying so.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ishiki_host import HttpResponse, HttpStream, Json, RuntimeKey, sse_event
from ishiki_host.errors import ChannelError

from ishiki_dashboard.app import Problem, json_response
from ishiki_dashboard.html import badge, esc
from ishiki_dashboard.pages.conversations import PAGE, read_since
from ishiki_dashboard.webchat.hub import WEB_HUB, ChatEvent, WebHub, chat_of

if TYPE_CHECKING:
    from ishiki_host import Entry, HostPluginContext, ProfileStatus, RuntimeLogView

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["ChatAccount", "register", "render_event", "web_accounts"]

KEPT = 500
"""How many events the page keeps shown (older ones are removed as new ones come)."""
MAX_TEXT = 16_000
"""The longest message the chat takes, in characters."""
_TURN_ENDS = {"turn.done", "turn.failed", "turn.aborted"}


@dataclass(frozen=True, slots=True)
class ChatAccount:
    """A ``web`` account a profile claims: its id, the profile, whether it runs, whether the user is an owner."""

    id: str
    profile: str
    running: bool
    owner: bool


def register(dash: Dashboard) -> None:
    """Mount the pages of this module."""
    chat = _Chat(dash)
    dash.page("/chat", chat.page, title="Chat", nav="chat")
    dash.api("/chat/say", chat.say, methods=("POST",))
    dash.api("/chat/stream", chat.stream, methods=("GET",))  # a 204 (not running) is no stream


def web_accounts(profiles: Sequence[ProfileStatus], hub: WebHub, user: str) -> list[ChatAccount]:
    """The ``web`` accounts the profiles claim (``web:<id>``), sorted by id."""
    found: dict[str, ChatAccount] = {}
    for status in profiles:
        if status.profile is None:
            continue
        owner = f"web:{user}" in status.profile.trust.owners
        for sid in status.profile.claims.by_sid:
            platform, _, account = sid.partition(":")
            if platform == "web" and account not in found:
                found[account] = ChatAccount(account, status.id, hub.running(account), owner)
    return [found[name] for name in sorted(found)]


class _Chat:
    def __init__(self, dash: Dashboard):
        self.dash = dash
        self._following: dict[RuntimeKey, _TurnFollower] = {}  # one a runtime: two would publish each call twice

    @property
    def ctx(self) -> HostPluginContext:
        return self.dash.ctx

    @property
    def hub(self) -> WebHub:
        return self.ctx.services.setdefault(WEB_HUB, WebHub)

    def _accounts(self) -> list[ChatAccount]:
        return web_accounts(self.ctx.profiles(), self.hub, self.dash.user)

    async def page(self, request: DashRequest) -> str:
        """The chat of the chosen account (the first running one unless ``account=`` says)."""
        accounts = self._accounts()
        if not accounts:
            return _NO_ACCOUNT
        wanted = request.query.get("account")
        chosen = next((a for a in accounts if a.id == wanted), None) or next(
            (a for a in accounts if a.running), accounts[0]
        )
        return _picker(self.dash, accounts, chosen) + self._chat(chosen)

    def _chat(self, account: ChatAccount) -> str:
        if not account.running:
            return (
                f'<p class="notice">The web account {esc(account.id)} is not running: add '
                f"<code>{{id: {esc(account.id)}}}</code> to <code>channels.web.accounts</code> in ishiki.yaml.</p>"
            )
        notice = "" if account.owner else _not_owner(self.dash.user, account.profile)
        stream = self.dash.url(f"/chat/stream?account={esc(account.id)}")
        say = self.dash.url("/chat/say")
        return (
            f"{notice}"
            f'<div class="chat" id="chat" aria-live="polite" data-sse="{esc(stream)}" data-sse-max="{KEPT}"></div>'
            f'<form class="chat-say" id="chat-form" method="post" data-api="{esc(say)}" data-stay>'
            f'<input type="hidden" name="account" value="{esc(account.id)}">'
            f'<input type="text" name="text" aria-label="Message" autocomplete="off" required '
            f'maxlength="{MAX_TEXT}" placeholder="Write to {esc(account.profile)}…">'
            f'<button type="submit">Send</button><p class="field-error" data-error-for="text"></p></form>'
        )

    async def say(self, request: DashRequest) -> HttpResponse:
        """``{account, text}`` into the host as the dashboard user's message (see the module docstring)."""
        fields = _fields(request)
        account, text = str(fields.get("account") or ""), str(fields.get("text") or "").strip()
        if not any(a.id == account for a in self._accounts()):
            raise Problem(400, f"no profile claims the web account {account!r}", field="account")
        if not text:
            raise Problem(400, "write something first", field="text")
        if len(text) > MAX_TEXT:
            raise Problem(400, f"a message holds at most {MAX_TEXT} characters", field="text")
        try:
            delivery = await self.hub.say(account, self.dash.user, text)
        except ChannelError as exc:
            raise Problem(409, str(exc), field="text") from exc
        if not delivery.routed:
            raise Problem(409, f"no profile answers web:{account} {chat_of(self.dash.user)}", field="text")
        await self._follow_turn(account, delivery.runtime_key, delivery.entry_id or 0)
        return json_response({"ok": True, "entry": delivery.entry_id}, status=202)

    async def _follow_turn(self, account: str, runtime_key: str | None, after: int) -> None:
        """Publish the tool calls of the turn the message starts, read from the runtime's log."""
        key = RuntimeKey.parse(runtime_key) if runtime_key is not None else None
        if key is None or not self.ctx.services.can_spawn or self._followed(key, after):
            return
        log = await self.ctx.runtime_log(key)
        if log is None or self._followed(key, after):  # a message said meanwhile may have started one
            return
        follower = self._following[key] = _TurnFollower(self.hub, account, chat_of(self.dash.user), log, after, key)

        async def follow() -> None:
            try:
                await follower.run()
            finally:
                del self._following[key]

        self.ctx.services.spawn(follow, name=f"dashboard chat: the turn of {key}")

    def _followed(self, key: RuntimeKey, after: int) -> bool:
        """Whether a follower reads the runtime's log already (it then reads on until the turn that answers
        the message of ``after`` has ended too)."""
        running = self._following.get(key)
        if running is not None:
            running.also(after)
        return running is not None

    async def stream(self, request: DashRequest) -> HttpStream | HttpResponse:
        """The chat's events as HTML fragments (see the module docstring)."""
        account = request.query.get("account", "")
        if not self.hub.running(account):
            return HttpResponse(204)  # EventSource does not reconnect after a 204
        subscription = self.hub.subscribe(account, chat_of(self.dash.user))

        async def events() -> AsyncIterator[str]:
            typing = False  # the host repeats the indicator while a turn runs: shown once until something is said
            try:
                async for event in subscription:
                    if event.kind != "typing" or not typing:
                        yield render_event(event)
                    typing = event.kind == "typing" or (typing and event.kind in ("tool", "draft"))
            finally:
                subscription.close()

        return HttpStream.sse(events())


class _TurnFollower:
    """Reads a runtime's log after the entry a message made, publishing the tool calls of its turns, until a turn
    that started after the newest message it follows has ended (``also`` adds a message said meanwhile)."""

    def __init__(self, hub: WebHub, account: str, chat: str, log: RuntimeLogView, after: int, key: RuntimeKey | None):
        self.hub, self.account, self.chat, self.log, self.after, self.key = hub, account, chat, log, after, key
        self.calls: dict[str, tuple[str, str]] = {}
        self.newest = after  # the entry of the newest message followed
        self.started = 0  # the entry of the last turn.start read

    def also(self, entry_id: int) -> None:
        """Follow on until the turn answering the message of ``entry_id`` has ended too."""
        self.newest = max(self.newest, entry_id)

    async def run(self) -> None:
        while not self.log.closed:
            for entry in await read_since(self.log, self.after, PAGE):
                self.after = entry.id
                if self._note(entry):
                    return
            await self.log.wait_appended(self.after)

    def _note(self, entry: Entry) -> bool:
        """Publish what the entry says; ``True`` at the turn's end."""
        data, role = entry.data, entry.data.get("role")
        if entry.type == "message" and role == "assistant":
            for call in _items(data.get("tool_calls")):
                if isinstance(call, Mapping):
                    self.calls[str(call.get("id"))] = (str(call.get("name")), _compact(call.get("arguments")))
        elif entry.type == "message" and role == "tool":
            self._publish_result(data, entry.ts)
        elif entry.type == "event" and entry.name == "turn.start":
            self.started = entry.id
        elif entry.type == "event" and entry.name in _TURN_ENDS:
            how = str(data.get("reason") or entry.name)
            self.hub.publish(self.account, self.chat, "done", how, ts=entry.ts)
            return self.started > self.newest  # a turn begun before the newest message did not answer it
        return False

    def _publish_result(self, data: Mapping[str, Json], ts: float) -> None:
        name, arguments = self.calls.pop(str(data.get("tool_call_id")), (str(data.get("tool_name", "tool")), ""))
        result = "\n".join(
            str(p.get("text", ""))
            for p in _items(data.get("parts"))
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
        mark = " (error)" if data.get("is_error") is True else ""
        detail = json.dumps({"arguments": arguments, "result": result[:2000]}, ensure_ascii=False)
        self.hub.publish(self.account, self.chat, "tool", name + mark, ts=ts, detail=detail)


def render_event(event: ChatEvent) -> str:
    """One chat event as a server-sent event whose data is an HTML fragment (appended to the chat), or, for a
    draft and the message that finishes it, an ``upsert`` keyed by the draft (``remove`` when taken back)."""
    if event.kind == "undraft" and event.text == "tools":
        return sse_event(event.detail, event="remove", id=str(event.seq))
    if event.kind == "draft" or (event.kind == "sent" and event.detail):
        return sse_event(_draft_fragment(event), event="upsert", id=str(event.seq))
    return sse_event(_fragment(event), id=str(event.seq))


def _draft_fragment(event: ChatEvent) -> str:
    """A draft being written, or the message it became (same key: it takes the draft's place)."""
    text = esc(event.text).replace("\n", "<br>")
    kind = "msg-persona msg-draft" if event.kind == "draft" else "msg-persona"
    key = esc(event.detail)
    return f'<div class="msg {kind}" data-key="{key}" data-seq="{event.seq}"><p>{text}</p></div>'


def _fragment(event: ChatEvent) -> str:
    text = esc(event.text).replace("\n", "<br>")
    if event.kind == "said":
        who = esc(event.sender or "")
        return f'<div class="msg msg-user" data-seq="{event.seq}"><p class="who">{who}</p><p>{text}</p></div>'
    if event.kind == "sent":
        return f'<div class="msg msg-persona" data-seq="{event.seq}"><p>{text}</p></div>'
    if event.kind == "tool":
        detail = json.loads(event.detail) if event.detail else {}
        return (
            f'<details class="msg msg-tool" data-seq="{event.seq}"><summary>Tool call: <code>{text}</code></summary>'
            f'<pre class="json">{esc(str(detail.get("arguments", "")))}</pre>'
            f'<pre class="result">{esc(str(detail.get("result", "")))}</pre></details>'
        )
    if event.kind == "typing":
        return f'<p class="msg msg-typing" data-seq="{event.seq}">writing…</p>'
    if event.kind == "done":
        return f'<p class="msg msg-done" data-seq="{event.seq}">turn ended: {text}</p>'
    if event.kind == "undraft":
        how = "the turn failed" if event.text == "failed" else "the turn was stopped"
        return f'<p class="msg msg-note" data-seq="{event.seq}">the reply above was cut short: {how}</p>'
    if event.kind == "failed":
        return f'<div class="msg msg-error" data-seq="{event.seq}">{badge("failed")} {text}</div>'
    return f'<p class="msg msg-note" data-seq="{event.seq}">{text}</p>'


def _picker(dash: Dashboard, accounts: Sequence[ChatAccount], chosen: ChatAccount) -> str:
    if len(accounts) < 2:
        return f"<h2>{esc(chosen.profile)} <small>web:{esc(chosen.id)}</small></h2>"
    links = []
    for account in accounts:
        href = dash.url(f"/chat?account={esc(account.id)}")
        current = ' aria-current="page"' if account is chosen else ""
        state = "" if account.running else f" {badge('not running')}"
        links.append(f'<li><a href="{href}"{current}>{esc(account.profile)} (web:{esc(account.id)})</a>{state}</li>')
    return f'<nav class="accounts"><ul>{"".join(links)}</ul></nav>'


def _not_owner(user: str, profile: str) -> str:
    return (
        f'<p class="notice">{esc(profile)} does not list <code>web:{esc(user)}</code> in <code>trust.owners</code>: '
        f"it treats you as any other person (no owner tools or commands). Add it to the profile to change that.</p>"
    )


def _fields(request: DashRequest) -> Mapping[str, Json]:
    """The body's fields: a urlencoded form (what the dashboard's script posts) or JSON."""
    if "json" not in request.http.headers.get("content-type", "json"):
        return dict(request.form())
    body = request.json()
    return body if isinstance(body, Mapping) else {}


def _items(value: Json) -> list[Json]:
    return value if isinstance(value, list) else []


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_NO_ACCOUNT = (
    '<p class="notice">No profile answers on the web chat. Claim a web account in a profile '
    '(<code>channels: {web:dashboard: ["*"]}</code>) and declare it in ishiki.yaml '
    "(<code>channels: {web: {accounts: [{id: dashboard}]}}</code>).</p>"
)
