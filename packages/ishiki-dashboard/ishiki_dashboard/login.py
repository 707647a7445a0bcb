"""The login page (``GET``/``POST /login``), ``POST /logout``, and the static files (``/static/<name>``).

The login form posts the token; a right one makes a session (``auth.Sessions``) and sends the browser to the
overview with its cookie, a wrong one answers 401 and counts against the client's address
(``auth.LoginLimiter``: 429 with ``Retry-After`` past the limit). These routes need no session; the static
files are the few names of ``STATIC`` (no path from the request reaches the file system).
"""

from __future__ import annotations

import importlib.resources
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from ishiki_host import HttpRequest, HttpResponse

from ishiki_dashboard.app import HTML, Problem, json_response, parse_form, redirect, retry_after
from ishiki_dashboard.auth import client_address, cookie_header, is_https, same_secret, session_cookie
from ishiki_dashboard.html import esc, form_field, layout, tag

if TYPE_CHECKING:
    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["STATIC", "register"]

STATIC = {
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
}
"""The files of ``ishiki_dashboard/static`` that are served, and their media types."""


def register(dash: Dashboard) -> None:
    """Add ``/login``, ``/logout`` and ``/static/<name>`` to ``dash``."""
    dash.public("/login", lambda request: login(dash, request), methods=("GET", "POST"))
    dash.form("/logout", lambda req: logout(dash, req))
    dash.api("/api/session", session_info)
    for name, media_type in STATIC.items():
        dash.public(f"/static/{name}", static_file(name, media_type), methods=("GET",), cache=_STATIC_CACHE)


_STATIC_CACHE = {"Cache-Control": "no-cache"}


def login_page(dash: Dashboard, message: str | None = None) -> str:
    """The login form, with ``message`` (why the last try failed) above it."""
    note = tag("p", message, cls="error") if message else ""
    body = (
        f'{note}<form method="post" action="{esc(dash.url("/login"))}" class="login">'
        f"{form_field('token', 'Token', kind='password', required=True)}"
        '<button type="submit">Log in</button></form>'
    )
    return layout("Log in", body, nav_active=None, csrf="", user="", prefix=dash.prefix)


async def login(dash: Dashboard, request: HttpRequest) -> HttpResponse:
    """``GET``: the form; ``POST``: check the token (see the module docstring)."""
    if request.method == "GET":
        return HttpResponse(200, login_page(dash), media_type=HTML)
    client = client_address(request)
    if (wait := dash.limiter.retry_after(client)) is not None:
        message = f"Too many wrong tokens: try again in {math.ceil(wait)} s."
        return HttpResponse(429, login_page(dash, message), media_type=HTML, headers=retry_after(wait))
    token = parse_form(request.body).get("token", "")
    if not same_secret(token, dash.token):
        dash.limiter.failed(client)
        dash.ctx.logger.warning("dashboard: a wrong token from %s", client)
        return HttpResponse(401, login_page(dash, "That token is not right."), media_type=HTML)
    session = dash.sessions.create(dash.user)
    secure = is_https(request, dash.mount.public_url)
    cookie = session_cookie(session.id, path=dash.prefix, secure=secure, max_age=int(dash.sessions.lifetime))
    dash.audit("login", {"client": client})
    return redirect(dash.url("/"), headers={"Set-Cookie": cookie})


async def logout(dash: Dashboard, req: DashRequest) -> HttpResponse:
    """End the session and clear its cookie; back to the login page."""
    session_id = cookie_header(req.http)
    if session_id is not None:
        dash.sessions.drop(session_id)
    secure = is_https(req.http, dash.mount.public_url)
    cookie = session_cookie("", path=dash.prefix, secure=secure, max_age=0)
    return redirect(dash.url("/login"), headers={"Set-Cookie": cookie})


async def session_info(req: DashRequest) -> HttpResponse:
    """Who the request acts as and its CSRF token (empty for a bearer token): for scripts and tests."""
    return json_response({"user": req.user, "csrf": req.csrf, "bearer": req.bearer})


def static_file(name: str, media_type: str) -> Callable[[HttpRequest], Awaitable[HttpResponse]]:
    """The handler of one static file, read from the package (once, in a thread) on its first request."""
    cached: list[bytes] = []

    async def serve(request: HttpRequest) -> HttpResponse:
        if not cached:
            resource = importlib.resources.files("ishiki_dashboard") / "static" / name
            try:
                cached.append(await anyio.to_thread.run_sync(resource.read_bytes))
            except OSError as exc:
                raise Problem(404, f"{name} is not installed") from exc
        return HttpResponse(200, cached[0], media_type=media_type)

    return serve
