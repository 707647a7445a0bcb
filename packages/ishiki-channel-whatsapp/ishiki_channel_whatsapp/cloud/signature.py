"""Meta's webhook signature: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body, keyed by the app
secret>``, checked over the bytes as received, before anything is parsed."""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SIGNATURE_HEADER", "sign", "verify"]

SIGNATURE_HEADER = "x-hub-signature-256"
_PREFIX = "sha256="


def sign(body: bytes, app_secret: str) -> str:
    """The header value Meta sends with ``body``: ``sha256=`` and the lower-case hex digest."""
    return _PREFIX + hmac.new(app_secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(body: bytes, header: str | None, app_secret: str) -> bool:
    """Whether ``header`` is the signature of ``body`` (compared in constant time; any case of hex digits)."""
    if not header or not header.startswith(_PREFIX):
        return False
    given = header[len(_PREFIX) :].strip().lower()
    return hmac.compare_digest(given.encode("ascii", "replace"), sign(body, app_secret)[len(_PREFIX) :].encode("ascii"))
