"""Who may use the dashboard: the login token, sessions with their CSRF tokens, and the login rate limit.

There is one secret, the token (``plugins.dashboard.token``, or one generated at each start). Logging in with
it makes a session: a random 32-byte id in an ``HttpOnly``, ``SameSite=Strict`` cookie on ``Path=/dashboard``
(``Secure`` when the request came over HTTPS), valid ``session_hours`` on the host's clock, with a CSRF token
of its own that every state-changing request must repeat. Sessions live in memory: a restart of the plugin or
the host logs everyone out. A script may send ``Authorization: Bearer <token>`` instead of a cookie; such a
request needs no CSRF token, since a browser never adds that header by itself.

Wrong tokens are counted per client address in a sliding window of a minute; past
``login_attempts_per_minute`` the login answers 429 with ``Retry-After`` until the oldest attempt leaves the
window. Every comparison of a secret is constant-time (``hmac.compare_digest``).
"""

from __future__ import annotations

import hmac
import secrets
from collections import deque
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host import Clock, HttpRequest

__all__ = [
    "COOKIE",
    "LoginLimiter",
    "Session",
    "Sessions",
    "bearer_token",
    "client_address",
    "cookie_header",
    "is_https",
    "same_secret",
    "session_cookie",
]

COOKIE = "ishiki_dashboard"
"""The session cookie's name."""

WINDOW_SECONDS = 60.0


def same_secret(given: str | None, expected: str) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@dataclass(slots=True)
class Session:
    """One signed-in browser: its cookie id, the user it acts as, its CSRF token and when it ends (host clock)."""

    id: str
    user: str
    csrf: str
    expires: float


class Sessions:
    """The sessions of one life of the plugin, in memory (see the module docstring)."""

    def __init__(self, clock: Clock, hours: float):
        self._clock = clock
        self.lifetime = hours * 3600.0
        self._by_id: dict[str, Session] = {}

    def create(self, user: str) -> Session:
        """A new session for ``user``, valid for ``session_hours`` from now."""
        self._forget_expired()
        session = Session(secrets.token_hex(32), user, secrets.token_urlsafe(32), self._clock.now() + self.lifetime)
        self._by_id[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of ``session_id``, ``None`` when there is none or it expired."""
        if not session_id:
            return None
        for known, session in self._by_id.items():
            if hmac.compare_digest(known, session_id):
                return session if session.expires > self._clock.now() else None
        return None

    def drop(self, session_id: str) -> None:
        """End a session (log out)."""
        self._by_id.pop(session_id, None)

    def __len__(self) -> int:
        return len(self._by_id)

    def _forget_expired(self) -> None:
        now = self._clock.now()
        for key in [k for k, s in self._by_id.items() if s.expires <= now]:
            del self._by_id[key]


class LoginLimiter:
    """Failed logins per client address in a sliding minute on the host's clock.

    An address whose window empties is forgotten, and past ``MAX_CLIENTS`` addresses every window is pruned,
    so many addresses that each tried once cannot grow it without bound.
    """

    MAX_CLIENTS = 10_000

    def __init__(self, clock: Clock, per_minute: int):
        self._clock = clock
        self.per_minute = per_minute
        self._failures: dict[str, deque[float]] = {}

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again, ``None`` when it may now."""
        window = self._pruned(client)
        if window is None or len(window) < self.per_minute:
            return None
        return max(1.0, window[0] + WINDOW_SECONDS - self._clock.monotonic())

    def failed(self, client: str) -> None:
        """Count a wrong token from ``client``."""
        window = self._pruned(client)
        if window is None:
            if len(self._failures) >= self.MAX_CLIENTS:
                for known in list(self._failures):
                    self._pruned(known)
            window = self._failures[client] = deque()
        window.append(self._clock.monotonic())

    def __len__(self) -> int:
        """How many client addresses have failures in the window (or not yet pruned)."""
        return len(self._failures)

    def _pruned(self, client: str) -> deque[float] | None:
        window = self._failures.get(client)
        if window is None:
            return None
        while window and window[0] <= self._clock.monotonic() - WINDOW_SECONDS:
            window.popleft()
        if not window:
            del self._failures[client]
            return None
        return window


def client_address(request: HttpRequest) -> str:
    """The peer's address without its port (``127.0.0.1``); ``unknown`` when the server did not say."""
    if request.client is None:
        return "unknown"
    return request.client.rsplit(":", 1)[0]


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, ``None`` without one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def cookie_header(request: HttpRequest) -> str | None:
    """The session cookie's value in the request, ``None`` without one (or with a cookie header that does not
    parse)."""
    raw = request.headers.get("cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def is_https(request: HttpRequest, public_url: str | None) -> bool:
    """Whether the browser reached the dashboard over HTTPS: the proxy says so (``X-Forwarded-Proto``) or the
    configured public URL is ``https``."""
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return forwarded == "https" or (public_url or "").startswith("https://")


def session_cookie(value: str, *, path: str, secure: bool, max_age: int | None) -> str:
    """A ``Set-Cookie`` value for the session cookie (``max_age`` 0 deletes it)."""
    parts = [f"{COOKIE}={value}", f"Path={path}", "HttpOnly", "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)
