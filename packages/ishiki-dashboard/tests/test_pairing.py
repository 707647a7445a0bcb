"""The pairing page on a real host: an unlisted sender's request is listed with its code, approving it (the
script's JSON form or a plain form) lets them in at the chosen level, a wrong or expired code is answered at
the ``code`` field, revoking shuts them out from their next message, and the page says when no profile pairs
or the host has no memory database. Every change is audited and needs the login and the CSRF token."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from ishiki_host.testing import profile_yaml

pytestmark = pytest.mark.anyio

PAIRING = {"ana": profile_yaml(extra="trust: {owners: ['fake:42'], unlisted: pairing}\n")}
BOB: dict[str, Any] = {"user_id": "9", "channel_id": "private:9"}
CODE = re.compile(r"Your pairing code is ([2-9A-HJ-NP-Z]{6}):")


async def ask(dash: Any, text: str = "hello?") -> str:
    """Bob writes in a direct chat; the code he was given."""
    await dash.th.channel().say(text, **BOB, user_name="Bob")
    found = CODE.search(dash.th.channel().texts()[-1])
    assert found is not None, dash.th.channel().texts()
    return found.group(1)


def audited(dash: Any) -> list[dict[str, Any]]:
    lines = (dash.ctx.state_dir / "audit.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


async def test_a_request_is_listed_and_approving_it_lets_the_sender_in(make_dash: Any) -> None:
    async with make_dash(profiles=PAIRING) as dash:
        code = await ask(dash)
        page = await dash.client.get("/pairing")
        assert page.status_code == 200
        assert f"<code>{code}</code>" in page.text
        assert "<td>fake:9</td><td>Bob</td><td>fake:bot private:9</td>" in page.text
        assert "(in 60 min)" in page.text
        assert 'data-api="/dashboard/pairing/approve"' in page.text
        assert '<option value="owner">owner</option>' in page.text
        assert "Profiles that pair unlisted senders: ana." in page.text
        assert 'href="/dashboard/pairing" aria-current="page"' in page.text

        made = await dash.post("/pairing/approve", data={"code": code.lower(), "level": "trusted"})
        assert made.status_code == 200, made.text
        assert made.json()["location"] == "/dashboard/pairing"
        assert made.json()["approved"]["level"] == "trusted"
        assert audited(dash)[-1]["action"] == "pairing.approve"
        assert audited(dash)[-1]["detail"] == {"code": code, "profile": "ana", "sender": "fake:9", "level": "trusted"}

        dash.model.tool_call("send_message", {"messages": ["hi Bob"]})
        await (await dash.th.channel().say("hi, it's Bob", **BOB)).settled()
        assert dash.th.channel().texts()[1:] == ["My owner let you in: welcome! I am listening now.", "hi Bob"]
        after = await dash.client.get("/pairing")
        listing = (await dash.client.get("/api/pairing")).json()
    assert "no open pairing requests" in after.text
    assert 'data-post="/dashboard/pairing/revoke"' in after.text
    assert listing["requests"] == []
    assert [(p["sender"], p["level"]) for p in listing["approved"]] == [("fake:9", "trusted")]
    assert listing["approved"][0]["toldAt"] is not None  # welcomed


async def test_a_wrong_or_expired_code_is_answered_at_the_code_field(make_dash: Any) -> None:
    async with make_dash(profiles=PAIRING) as dash:
        code = await ask(dash)
        wrong = await dash.post("/pairing/approve", data={"code": "ZZZ-ZZZ", "level": "trusted"})
        empty = await dash.post("/pairing/approve", data={"code": " ", "level": "trusted"})
        bad_level = await dash.post("/pairing/approve", data={"code": code, "level": "admin"})
        await dash.clock.advance(3600)
        expired = await dash.post("/pairing/approve", data={"code": code, "level": "trusted"})
        stored = await dash.ctx.pairing.approved()
    assert (wrong.status_code, wrong.json()) == (409, {"error": "no pending request with code ZZZZZZ", "field": "code"})
    assert (empty.status_code, empty.json()["field"]) == (400, "code")
    assert (bad_level.status_code, bad_level.json()["field"]) == (400, "level")
    assert expired.status_code == 409
    assert re.fullmatch(rf"code {code} expired at .* UTC; ask for a new one", expired.json()["error"])
    assert stored == []


async def test_a_plain_form_goes_back_to_the_page_or_shows_the_message(make_dash: Any) -> None:
    async with make_dash(profiles=PAIRING) as dash:
        code = await ask(dash)
        html = {"Accept": "text/html"}
        wrong = await dash.client.post("/pairing/approve", data={"csrf": dash.csrf, "code": "ZZZZZZ"}, headers=html)
        done = await dash.client.post("/pairing/approve", data={"csrf": dash.csrf, "code": code}, headers=html)
        [paired] = await dash.ctx.pairing.approved()
    assert wrong.status_code == 409
    assert "no pending request with code ZZZZZZ" in wrong.text
    assert wrong.headers["content-type"].startswith("text/html")
    assert (done.status_code, done.headers["location"]) == (303, "/dashboard/pairing")
    assert paired.level == "untrusted"  # the form's default, as the CLI's


async def test_revoking_shuts_the_sender_out_from_their_next_message(make_dash: Any) -> None:
    async with make_dash(profiles=PAIRING) as dash:
        await dash.post("/pairing/approve", data={"code": await ask(dash), "level": "owner"})
        calls = len(dash.model.requests)
        revoked = await dash.post("/pairing/revoke", data={"profile": "ana", "sender": "fake:9"})
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["revoked"]["level"] == "owner"
        assert audited(dash)[-1]["detail"] == {"profile": "ana", "sender": "fake:9", "level": "owner"}
        renewed = await ask(dash, "am I still in?")  # refused: a new code, nothing reached the model
        again = await dash.post("/pairing/revoke", data={"profile": "ana", "sender": "fake:9"})
        [request] = await dash.ctx.pairing.requests()
        assert len(dash.model.requests) == calls
    assert request.code == renewed
    assert (again.status_code, again.json()) == (
        404,
        {"error": "fake:9 is not approved for profile ana", "field": "sender"},
    )


async def test_changes_need_the_login_and_the_csrf_token(make_dash: Any) -> None:
    async with make_dash(profiles=PAIRING) as dash:
        code = await ask(dash)
        no_csrf = await dash.client.post("/pairing/approve", data={"code": code})
        async with dash.anonymous() as stranger:
            anonymous = await stranger.post("/pairing/approve", data={"code": code})
            page = await stranger.get("/pairing")
            bearer = await stranger.post(
                "/pairing/approve", data={"code": code}, headers={"Authorization": f"Bearer {dash.token}"}
            )
    assert no_csrf.status_code == 403
    assert anonymous.status_code == 401
    assert (page.status_code, page.headers["location"]) == (303, "/dashboard/login")
    assert bearer.status_code == 200  # a script with the token needs no CSRF token


async def test_the_page_says_when_no_profile_pairs(dash: Any) -> None:
    page = await dash.client.get("/pairing")
    assert "No profile uses pairing" in page.text
    assert "no open pairing requests" in page.text
    assert "no sender approved yet" in page.text


async def test_the_page_says_when_the_host_has_no_memory_database(make_dash: Any) -> None:
    async with make_dash(profiles=PAIRING, files={"data/memory.db": "not a database at all"}) as dash:
        page = await dash.client.get("/pairing")
        refused = await dash.post("/pairing/approve", data={"code": "ABCDEF"})
        listing = await dash.client.get("/api/pairing")
    assert page.status_code == 200
    assert "This host has no memory database, so it keeps no pairing codes" in page.text
    assert refused.status_code == 503
    assert listing.status_code == 503
