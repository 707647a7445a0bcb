"""The access token, both ways: what the host sends (``Authorization: Bearer``) and what it requires of an
implementation that connects or posts to it (reverse and http modes).

OneBot v11 lets an implementation give the token as ``Authorization: Bearer <token>`` (or ``Token <token>``)
or as the ``access_token`` query parameter; an HTTP post may instead be signed, ``X-Signature:
sha1=<HMAC-SHA1 of the body, keyed with the secret>`` (the implementation's ``secret``, set to the same
token). Comparisons are constant-time. Without a configured token nothing is required.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

__all__ = ["bearer", "token_matches"]


def bearer(token: str | None) -> dict[str, str]:
    """The headers that carry ``token`` (none without one)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def token_matches(
    token: str | None, headers: Mapping[str, str], query: Mapping[str, str], body: bytes | None = None
) -> bool:
    """Whether a request (headers in lower case) carries ``token`` in any of the ways the module docstring
    lists; True when no token is configured."""
    if not token:
        return True
    scheme, _, given = headers.get("authorization", "").partition(" ")
    if scheme.lower() in ("bearer", "token") and _same(given.strip(), token):
        return True
    if "access_token" in query and _same(query["access_token"], token):
        return True
    signature = headers.get("x-signature", "")
    if body is not None and signature.startswith("sha1="):
        expected = hmac.new(token.encode("utf-8"), body, hashlib.sha1).hexdigest()
        return _same(signature.removeprefix("sha1="), expected)
    return False


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))
