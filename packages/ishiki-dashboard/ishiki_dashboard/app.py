"""The dashboard's routing: pages, JSON APIs, streams and forms under ``/dashboard``, each behind the login.

A page module's ``register(dash)`` adds its routes to the ``Dashboard``:

- ``dash.page(path, handler, title=..., nav=...)``: a GET page; ``handler(req)`` returns the body's HTML (the
  app wraps it in the layout), a ``Titled`` (a title of its own as well), or an ``HttpResponse`` sent as is;
- ``dash.api(path, handler, methods=...)``: JSON (``json_response``), or an ``HttpStream``;
- ``dash.stream(path, handler)``: a GET answered by an ``HttpStream`` (server-sent events);
- ``dash.form(path, handler)``: a POST that changes something, answered by ``redirect`` or ``json_response``.

Every route but ``/login`` and ``/static/*`` needs a session cookie or ``Authorization: Bearer <token>``: a
page GET without either is sent (303) to ``/dashboard/login``, anything else gets 401 JSON. A POST, PUT, PATCH
or DELETE with a cookie must carry the session's CSRF token (header ``X-CSRF-Token`` or form field ``csrf``),
else 403; with a bearer token it needs none. A handler raises ``Problem(status, message, field=...)`` for an
error page (or ``{"error": message, "field": field}`` from an API). Every answer carries the
Content-Security-Policy (no inline script or style) and the other security headers; pages and APIs are
``no-store``.

The host's HTTP ingress routes exact paths, never prefixes, so a page of one thing takes its id as a query
parameter: ``/conversations/view?key=...``, ``/memories/view?id=...``.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ishiki_host import HttpRequest, HttpResponse, HttpStream, Json, loads_strict

from ishiki_dashboard.auth import (
    LoginLimiter,
    Sessions,
    bearer_token,
    client_address,
    cookie_header,
    same_secret,
)
from ishiki_dashboard.html import layout, masked, tag

if TYPE_CHECKING:
    from ishiki_host import HostPluginContext, HttpMount, MemoryStore

__all__ = [
    "CSP",
    "SECURITY_HEADERS",
    "DashRequest",
    "Dashboard",
    "Problem",
    "Titled",
    "json_response",
    "redirect",
    "retry_after",
]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
"""What every answer of the dashboard carries."""

NO_STORE: Mapping[str, str] = {"Cache-Control": "no-store"}
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
HTML = "text/html; charset=utf-8"
JSON = "application/json"


class Problem(Exception):
    """Raised by a handler: answer ``status`` with ``message`` (an error page, or JSON ``{"error", "field"}``)."""

    def __init__(
        self, status: int, message: str, *, field: str | None = None, headers: Mapping[str, str] | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = dict(headers or {})


class Titled(NamedTuple):
    """What a page handler returns when its title depends on the request: the title and the body's HTML."""

    title: str
    body: str


def json_response(obj: object, status: int = 200, *, headers: Mapping[str, str] | None = None) -> HttpResponse:
    """``obj`` as a JSON answer."""
    body = json.dumps(obj, ensure_ascii=False, default=str)
    return HttpResponse(status, body, media_type=JSON, headers=dict(headers or {}))


def redirect(url: str, *, status: int = 303, headers: Mapping[str, str] | None = None) -> HttpResponse:
    """A redirect to ``url`` (303 by default: the browser follows it with a GET)."""
    return HttpResponse(status, b"", headers={"Location": url, **(headers or {})})


@dataclass(frozen=True, slots=True)
class DashRequest:
    """A request that passed the login: ``http`` the ingress's request, ``user`` who sent it, ``csrf`` the
    session's token (empty for a bearer-token request, which needs none: ``bearer`` is true)."""

    http: HttpRequest
    user: str
    csrf: str
    bearer: bool = False

    @property
    def query(self) -> Mapping[str, str]:
        """The query parameters (the first value of each)."""
        return self.http.query

    @property
    def client(self) -> str:
        """The peer's address, without its port."""
        return client_address(self.http)

    def form(self) -> dict[str, str]:
        """The urlencoded body as fields (the first value of each); ``Problem(400)`` for a body that is not."""
        return parse_form(self.http.body)

    def json(self) -> Json:
        """The body as JSON; ``Problem(400)`` when it is not (duplicate keys and NaN included)."""
        try:
            return loads_strict(self.http.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise Problem(400, f"the body is not JSON: {exc}") from exc


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body as fields; ``Problem(400)`` when it is not one."""
    if not body.strip():
        return {}
    try:
        fields = urllib.parse.parse_qs(
            body.decode("utf-8"), keep_blank_values=True, strict_parsing=True, errors="strict"
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise Problem(400, "the body is not a form (application/x-www-form-urlencoded)") from exc
    return {name: values[0] for name, values in fields.items()}


PageHandler = Callable[[DashRequest], Awaitable["str | Titled | HttpResponse"]]
ApiHandler = Callable[[DashRequest], Awaitable["HttpResponse | HttpStream"]]
StreamHandler = Callable[[DashRequest], Awaitable[HttpStream]]
FormHandler = Callable[[DashRequest], Awaitable[HttpResponse]]


def secured(answer: HttpResponse | HttpStream, *, cache: Mapping[str, str] = NO_STORE) -> HttpResponse | HttpStream:
    """``answer`` with the security headers (and ``cache``) added; its own headers win."""
    return replace(answer, headers={**SECURITY_HEADERS, **cache, **answer.headers})


class Dashboard:
    """The dashboard's routes on one mount (see the module docstring); one per life of the plugin.

    ``config`` is the validated ``plugins.dashboard`` block, its ``token`` filled in (the configured or the
    generated one).
    """

    def __init__(self, ctx: HostPluginContext, config: Mapping[str, Any], mount: HttpMount):
        self.ctx = ctx
        self.config = config
        self.mount = mount
        self.user = str(config["user"])
        self.prefix = mount.prefix
        self.token = str(config["token"])
        self.sessions = Sessions(ctx.clock, float(config["session_hours"]))
        self.limiter = LoginLimiter(ctx.clock, int(config["login_attempts_per_minute"]))
        self.audit_logger = ctx.logger.getChild("audit")

    def memory(self, why: str = "") -> MemoryStore:
        """The host's memory database; ``Problem(503)`` when it has none (``why`` says what that stops)."""
        store = self.ctx.services.memory
        if store is None:
            raise Problem(503, f"the host has no memory database{why}")
        return store

    def url(self, path: str) -> str:
        """``path`` below the dashboard's prefix (``/logs`` -> ``/dashboard/logs``)."""
        return self.prefix + path

    # -- routes ------------------------------------------------------------------------------------------------

    def page(self, path: str, handler: PageHandler, *, title: str, nav: str | None = None) -> None:
        """A GET page (see the module docstring); ``nav`` is the key of its navigation entry (``logs``)."""

        async def serve(req: DashRequest) -> HttpResponse:
            answer = await handler(req)
            if isinstance(answer, HttpResponse):
                return answer
            shown_title, body = answer if isinstance(answer, Titled) else (title, answer)
            return HttpResponse(200, self.render(shown_title, body, req, nav=nav), media_type=HTML)

        self._route(path, serve, methods=("GET",), kind="page", nav=nav)

    def api(self, path: str, handler: ApiHandler, *, methods: Sequence[str] = ("GET",)) -> None:
        """A JSON route (or a stream) for ``methods``."""
        self._route(path, handler, methods=methods, kind="api")

    def stream(self, path: str, handler: StreamHandler) -> None:
        """A GET answered by a stream (``HttpStream.sse``)."""
        self._route(path, handler, methods=("GET",), kind="api")

    def form(self, path: str, handler: FormHandler) -> None:
        """A POST that changes something (CSRF-checked), answered by ``redirect`` or ``json_response``."""
        self._route(path, handler, methods=("POST",), kind="form")

    def public(
        self,
        path: str,
        handler: Callable[[HttpRequest], Awaitable[HttpResponse]],
        *,
        methods: Sequence[str],
        cache: Mapping[str, str] = NO_STORE,
    ) -> None:
        """A route without the login (the login page itself, the static files), with the security headers."""

        async def serve(request: HttpRequest) -> HttpResponse | HttpStream:
            try:
                answer = await handler(request)
            except Problem as problem:
                answer = self._problem_answer(problem, request, kind="page")
            return secured(answer, cache=cache)

        self.mount.route(path, serve, methods=methods)

    # -- pages and audit ---------------------------------------------------------------------------------------

    def render(self, title: str, body: str, req: DashRequest | None, *, nav: str | None = None) -> str:
        """``body`` in the layout, for the user and CSRF token of ``req``."""
        csrf = req.csrf if req is not None else ""
        user = req.user if req is not None else ""
        return layout(title, body, nav_active=nav, csrf=csrf, user=user, prefix=self.prefix)

    def audit(self, action: str, detail: Mapping[str, Json]) -> None:
        """Record an admin action: a line on ``ishiki_host.hostplugin.dashboard.audit`` (INFO) and one in
        ``<state_dir>/audit.jsonl`` (``ts`` on the host's clock, ``user``, ``action``, ``detail`` masked).

        The file gets one short line per action, appended at once: small enough not to need a thread.
        """
        shown = masked(dict(detail))
        record = {"ts": self.ctx.clock.now(), "user": self.user, "action": action, "detail": shown}
        line = json.dumps(record, ensure_ascii=False, sort_keys=True)
        self.audit_logger.info("%s: %s %s", self.user, action, json.dumps(shown, ensure_ascii=False))
        with (self.ctx.state_dir / "audit.jsonl").open("a", encoding="utf-8") as log:
            log.write(line + "\n")

    # -- the guard ---------------------------------------------------------------------------------------------

    def _route(
        self, path: str, handler: ApiHandler, *, methods: Sequence[str], kind: str, nav: str | None = None
    ) -> None:
        async def serve(request: HttpRequest) -> HttpResponse | HttpStream:
            try:
                req = self._authenticate(request)
                if req is None:
                    answer: HttpResponse | HttpStream = self._unauthenticated(request, kind)
                else:
                    if request.method in UNSAFE_METHODS and not req.bearer:
                        self._check_csrf(req)
                    answer = await handler(req)
            except Problem as problem:
                answer = self._problem_answer(problem, request, kind=kind, nav=nav)
            return secured(answer)

        self.mount.route(path, serve, methods=methods)

    def _authenticate(self, request: HttpRequest) -> DashRequest | None:
        """The request's session or bearer token; ``None`` without either, ``Problem(429)`` past the limit."""
        token = bearer_token(request)
        if token is not None:
            client = client_address(request)
            if (wait := self.limiter.retry_after(client)) is not None:
                raise Problem(429, f"too many wrong tokens; try again in {wait:.0f} s", headers=retry_after(wait))
            if same_secret(token, self.token):
                return DashRequest(request, self.user, "", bearer=True)
            self.limiter.failed(client)
            return None
        session = self.sessions.get(cookie_header(request))
        return None if session is None else DashRequest(request, session.user, session.csrf)

    def _check_csrf(self, req: DashRequest) -> None:
        sent = req.http.headers.get("x-csrf-token")
        if sent is None and "json" not in req.http.headers.get("content-type", ""):
            sent = parse_form(req.http.body).get("csrf")
        if not same_secret(sent, req.csrf):
            raise Problem(403, "the CSRF token is missing or wrong: reload the page")

    def _unauthenticated(self, request: HttpRequest, kind: str) -> HttpResponse:
        if kind == "page":
            return redirect(self.url("/login"))
        return json_response({"error": "log in first (a session cookie or Authorization: Bearer)"}, 401)

    def _problem_answer(
        self, problem: Problem, request: HttpRequest, *, kind: str, nav: str | None = None
    ) -> HttpResponse:
        headers = problem.headers
        wants_html = kind == "page" or (kind == "form" and "text/html" in request.headers.get("accept", ""))
        if not wants_html:
            body: dict[str, Json] = {"error": problem.message}
            if problem.field is not None:
                body["field"] = problem.field
            return json_response(body, problem.status, headers=headers)
        page = layout(
            f"Error {problem.status}",
            tag("p", problem.message, cls="error"),
            nav_active=nav,
            csrf="",
            user="",
            prefix=self.prefix,
        )
        return HttpResponse(problem.status, page, media_type=HTML, headers=headers)


def retry_after(seconds: float) -> dict[str, str]:
    """A ``Retry-After`` header of whole seconds (rounded up)."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}
