"""``/pairing``: DM pairing as ``ishiki pairing`` does it: the open requests with a form that approves each, a
form that approves the code a sender gave, and the approved senders with a button that revokes each.

Everything goes through ``HostPluginContext.pairing`` (``PairingAdmin``); without a memory database it is
``None`` and the page says so, as it says when no profile has ``trust.unlisted: pairing`` (then no sender is
given a code).

- ``/pairing``: the open requests (code, profile, sender, name, where they asked, when the code expires), each
  with a level (``untrusted``, ``trusted``, ``owner``) and Approve; "Approve a code"; the approved senders
  (profile, sender, level, when, whether they were welcomed yet), each with Revoke.
- ``POST /pairing/approve`` (``code``, ``level``): a wrong, used or expired code (``PairingCodeError``) answers
  409 ``{"error", "field": "code"}``, shown beside the code ("code K7QX2M expired at ..."); a bad level 400.
- ``POST /pairing/revoke`` (``profile``, ``sender``): 404 at ``sender`` when there is no such approval.
- ``/api/pairing``: the requests and approvals as JSON, shaped as ``ishiki pairing list --json`` prints them.

A form posted by the dashboard's script gets JSON (``location``: the page again); a plain form (no script)
is sent back to the page. Every approval and revocation is audited; the running host sees either at the
sender's next message.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, get_args
from zoneinfo import ZoneInfo

from ishiki_host import HttpResponse, Json, TrustLevel
from ishiki_host.errors import PairingCodeError

from ishiki_dashboard.app import Problem, json_response, redirect
from ishiki_dashboard.html import Safe, badge, button_post, csrf_field, esc, section, table, tag

if TYPE_CHECKING:
    from ishiki_host import HostPluginContext, PairedSender, PairingAdmin, PairingRequest

    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["APPROVE", "LEVELS", "REVOKE", "register"]

APPROVE = "/pairing/approve"
REVOKE = "/pairing/revoke"
LEVELS: tuple[TrustLevel, ...] = get_args(TrustLevel)
"""The levels an approval may give, lowest first (``untrusted`` is the form's default, as the CLI's)."""


def register(dash: Dashboard) -> None:
    """``/pairing``, ``/api/pairing``, ``POST /pairing/approve`` and ``POST /pairing/revoke``."""
    pages = _Pairing(dash)
    dash.page("/pairing", pages.index, title="Pairing", nav="pairing")
    dash.api("/api/pairing", pages.api)
    dash.form(APPROVE, pages.approve)
    dash.form(REVOKE, pages.revoke)


class _Pairing:
    def __init__(self, dash: Dashboard):
        self.dash = dash

    @property
    def ctx(self) -> HostPluginContext:
        return self.dash.ctx

    # -- pages ------------------------------------------------------------------------------------------

    async def index(self, request: DashRequest) -> str:
        """The requests with their approve forms, the code form, and the approvals with their revoke buttons."""
        admin = self.ctx.pairing
        if admin is None:
            why = self.ctx.services.memory_error or "the host runs without data/memory.db"
            return (
                '<p class="notice">This host has no memory database, so it keeps no pairing codes: every unlisted '
                f"sender of a pairing profile is refused ({esc(why)}).</p>"
            )
        pairing = self._pairing_profiles()
        requests, approved = await admin.requests(), await admin.approved()
        rows = [self._request_row(r, request.csrf) for r in requests]
        headers = ["Code", "Profile", "Sender", "Name", "Where", "Expires", "Approve as"]
        parts = [
            self._profiles_notice(pairing),
            section("Open requests", table(headers, rows, empty="no open pairing requests")),
            section("Approve a code", self._code_form(request.csrf)),
            section("Approved senders", self._approved(approved, pairing)),
        ]
        return "".join(parts)

    async def api(self, request: DashRequest) -> HttpResponse:
        """The open requests and the approvals as JSON."""
        admin = self._admin()
        requests, approved = await admin.requests(), await admin.approved()
        return json_response({"requests": [r.to_json() for r in requests], "approved": [p.to_json() for p in approved]})

    # -- the forms --------------------------------------------------------------------------------------

    async def approve(self, request: DashRequest) -> HttpResponse:
        """Let the sender of ``code`` in at ``level`` (audited)."""
        admin = self._admin()
        fields = request.form()
        code = fields.get("code", "").strip()
        if not code:
            raise Problem(400, "type the code the sender was given", field="code")
        level = _level(fields.get("level") or "untrusted")
        try:
            paired = await admin.approve(code, level)
        except PairingCodeError as exc:  # its message names the code and why (unknown, used, expired when)
            raise Problem(409, str(exc), field="code") from exc
        detail: dict[str, Json] = {"code": paired.code, "profile": paired.profile, "sender": paired.sender}
        self.dash.audit("pairing.approve", {**detail, "level": paired.level})
        return self._done(request, {"approved": paired.to_json()})

    async def revoke(self, request: DashRequest) -> HttpResponse:
        """Remove the approval of ``sender`` for ``profile`` (audited)."""
        admin = self._admin()
        fields = request.form()
        profile, sender = fields.get("profile", "").strip(), fields.get("sender", "").strip()
        if not profile or not sender:
            raise Problem(400, "name the profile and the sender whose approval to revoke", field="sender")
        removed = await admin.revoke(profile, sender)
        if removed is None:
            raise Problem(404, f"{sender} is not approved for profile {profile}", field="sender")
        self.dash.audit("pairing.revoke", {"profile": profile, "sender": sender, "level": removed.level})
        return self._done(request, {"revoked": removed.to_json()})

    def _admin(self) -> PairingAdmin:
        admin = self.ctx.pairing
        if admin is None:
            raise Problem(503, "this host has no memory database, so it keeps no pairing codes")
        return admin

    def _done(self, request: DashRequest, answer: dict[str, Json]) -> HttpResponse:
        """JSON for the script (and API clients), the page again for a plain form."""
        page = self.dash.url("/pairing")
        if "text/html" in request.http.headers.get("accept", ""):
            return redirect(page)
        return json_response({**answer, "location": page})

    # -- pieces -----------------------------------------------------------------------------------------

    def _pairing_profiles(self) -> list[str]:
        """The profiles (loaded) whose ``trust.unlisted`` is ``pairing``."""
        return [s.id for s in self.ctx.profiles() if s.profile is not None and s.profile.trust.unlisted == "pairing"]

    def _profiles_notice(self, pairing: list[str]) -> str:
        if not pairing:
            return (
                '<p class="notice">No profile uses pairing: a profile with <code>trust.unlisted: pairing</code> '
                "gives an unlisted sender in a direct chat a code to approve here.</p>"
            )
        return str(tag("p", f"Profiles that pair unlisted senders: {', '.join(pairing)}.", cls="hint"))

    def _request_row(self, request: PairingRequest, csrf: str) -> list[object]:
        expires = f"{self._when(request.expires_at)} ({_left(request.expires_at - self.ctx.clock.now())})"
        form = self._approve_form(csrf, code=request.code, label="Approve")
        return [tag("code", request.code), request.profile, request.sender, request.name or "", request.channel,
                expires, form]  # fmt: skip

    def _approve_form(self, csrf: str, *, code: str | None, label: str) -> Safe:
        """A form posting ``code`` (hidden, or typed when ``code`` is ``None``) and a level to ``APPROVE``."""
        url = self.dash.url(APPROVE)
        if code is None:
            field = '<input type="text" name="code" required placeholder="K7QX2M" aria-label="Pairing code">'
        else:
            field = f'<input type="hidden" name="code" value="{esc(code)}">'
        choices = "".join(tag("option", level, value=level, selected=level == "untrusted") for level in LEVELS)
        level = f'<select name="level" aria-label="Trust level">{choices}</select>'
        errors = tag("span", "", cls="field-error", data_error_for="code")
        return Safe(
            f'<form class="inline" method="post" action="{esc(url)}" data-api="{esc(url)}">{csrf_field(csrf)}'
            f'{field}{level}<button type="submit">{esc(label)}</button>{errors}</form>'
        )

    def _code_form(self, csrf: str) -> Safe:
        hint = tag("p", "The code a sender was given, as they told it to you (any case, spaces or dashes).", cls="hint")
        return Safe(hint + self._approve_form(csrf, code=None, label="Approve"))

    def _approved(self, approved: list[PairedSender], pairing: list[str]) -> Safe:
        rows = []
        for paired in approved:
            counted = "" if paired.profile in pairing else " (not counted: the profile does not pair now)"
            welcomed = self._when(paired.told_at) if paired.told_at is not None else "not yet"
            rows.append([paired.profile, paired.sender, Safe(badge(paired.level) + esc(counted)),
                         self._when(paired.approved_at), welcomed, self._revoke_button(paired)])  # fmt: skip
        headers = ["Profile", "Sender", "Level", "Approved", "Welcomed", ""]
        return table(headers, rows, empty="no sender approved yet")

    def _revoke_button(self, paired: PairedSender) -> Safe:
        return button_post(
            self.dash.url(REVOKE),
            "Revoke",
            body={"profile": paired.profile, "sender": paired.sender},
            confirm=f"Revoke {paired.sender} for {paired.profile}? They are refused from their next message.",
            cls="danger",
        )

    def _when(self, ts: float) -> str:
        try:
            zone = ZoneInfo(self.ctx.services.timezone)
        except (ValueError, KeyError):
            zone = ZoneInfo("UTC")
        return f"{datetime.fromtimestamp(ts, zone):%Y-%m-%d %H:%M}"


def _level(text: str) -> TrustLevel:
    for level in LEVELS:
        if level == text:
            return level
    raise Problem(400, f"level is one of {', '.join(LEVELS)}, not {text!r}", field="level")


def _left(seconds: float) -> str:
    """``in 42 min`` (rounded up), ``in 2 h``."""
    minutes = max(1, -int(-seconds // 60))
    return f"in {minutes} min" if minutes < 120 else f"in {minutes // 60} h"
