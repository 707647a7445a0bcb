"""Logging in, sessions, CSRF and bearer tokens, over real HTTP to the host's ingress."""

from __future__ import annotations

import httpx
import pytest
from ishiki_host import FakeClock

from ishiki_dashboard.auth import COOKIE, LoginLimiter

pytestmark = pytest.mark.anyio

TOKEN = "t0ken-for-tests"


async def test_a_right_token_logs_in_with_a_strict_cookie(dash) -> None:
    async with dash.anonymous() as client:
        answer = await client.post("/login", data={"token": TOKEN})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    flags = {part.strip() for part in cookie.split(";")[1:]}
    assert {"HttpOnly", "SameSite=Strict", "Path=/dashboard"} <= flags
    assert "Secure" not in flags
    assert len(cookie.split(";")[0].split("=", 1)[1]) == 64  # 32 random bytes, hex


async def test_the_cookie_is_secure_behind_an_https_proxy(dash) -> None:
    async with dash.anonymous() as client:
        answer = await client.post("/login", data={"token": TOKEN}, headers={"X-Forwarded-Proto": "https"})
    assert "Secure" in {part.strip() for part in answer.headers["set-cookie"].split(";")}


async def test_a_wrong_token_is_refused_and_counted(dash) -> None:
    async with dash.anonymous() as client:
        answers = [await client.post("/login", data={"token": f"wrong-{i}"}) for i in range(5)]
        sixth = await client.post("/login", data={"token": TOKEN})
    assert [a.status_code for a in answers] == [401] * 5
    assert "set-cookie" not in answers[0].headers
    assert sixth.status_code == 429
    assert int(sixth.headers["retry-after"]) >= 1
    assert "set-cookie" not in sixth.headers


async def test_the_limit_is_a_sliding_minute_on_the_host_clock(dash) -> None:
    async with dash.anonymous() as client:
        for i in range(5):
            await client.post("/login", data={"token": f"wrong-{i}"})
        assert (await client.post("/login", data={"token": TOKEN})).status_code == 429
        await dash.clock.advance(61)
        assert (await client.post("/login", data={"token": TOKEN})).status_code == 303


async def test_pages_need_a_session(dash) -> None:
    async with dash.anonymous() as client:
        page = await client.get("/logs")
        api = await client.get("/api/overview")
    assert page.status_code == 303
    assert page.headers["location"] == "/dashboard/login"
    assert api.status_code == 401
    assert "error" in api.json()


async def test_a_session_expires_after_session_hours(dash) -> None:
    assert (await dash.client.get("/api/session")).status_code == 200
    await dash.clock.advance(12 * 3600 + 1)
    assert (await dash.client.get("/api/session")).status_code == 401


async def test_a_bearer_token_needs_no_csrf(dash) -> None:
    async with dash.anonymous(headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        session = await client.get("/api/session")
        reload = await client.post("/reload")
    assert session.json() == {"user": "admin", "csrf": "", "bearer": True}
    assert reload.status_code in (200, 202, 303)


async def test_a_wrong_bearer_token_is_refused(dash) -> None:
    async with dash.anonymous(headers={"Authorization": "Bearer nope"}) as client:
        answer = await client.get("/api/session")
    assert answer.status_code == 401


async def test_a_post_without_the_csrf_token_is_forbidden(dash) -> None:
    without = await dash.client.post("/reload")
    wrong = await dash.client.post("/reload", headers={"X-CSRF-Token": "nope"})
    in_form = await dash.client.post("/reload", data={"csrf": dash.csrf})
    assert without.status_code == 403
    assert wrong.status_code == 403
    assert in_form.status_code != 403


async def test_logout_ends_the_session(dash) -> None:
    answer = await dash.client.post("/logout", data={"csrf": dash.csrf})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/login"
    assert "Max-Age=0" in answer.headers["set-cookie"]
    assert (await dash.client.get("/api/session")).status_code == 401


async def test_a_huge_body_is_refused_by_the_ingress(dash) -> None:
    answer = await dash.post("/reload", content=b"x" * (1024 * 1024 + 1))
    assert answer.status_code == 413


async def test_a_malformed_form_is_a_bad_request(dash) -> None:
    answer = await dash.client.post(
        "/logout",
        content=b"csrf=%zz&&=",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status_code == 400


async def test_the_login_page_needs_no_session(dash) -> None:
    async with dash.anonymous() as client:
        page = await client.get("/login")
    assert page.status_code == 200
    assert 'name="token"' in page.text
    assert isinstance(page, httpx.Response)


async def test_the_limiter_forgets_addresses_whose_minute_passed() -> None:
    clock = FakeClock()
    limiter = LoginLimiter(clock, per_minute=2)
    for n in range(100):
        limiter.failed(f"10.0.0.{n}")
    limiter.failed("10.0.0.1")
    assert limiter.retry_after("10.0.0.1") is not None
    assert limiter.retry_after("10.0.0.2") is None
    await clock.advance(61)
    assert limiter.retry_after("10.0.0.1") is None
    limiter.failed("10.0.0.200")  # a new address; the others are pruned as they are read
    assert all(limiter.retry_after(f"10.0.0.{n}") is None for n in range(100))
    assert len(limiter) == 1
