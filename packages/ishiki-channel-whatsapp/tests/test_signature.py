"""X-Hub-Signature-256: HMAC-SHA256 of the raw body with the app secret, checked in constant time."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from ishiki_channel_whatsapp import sign, verify

SECRET = "app-secret"
BODY = b'{"object":"whatsapp_business_account","entry":[]}'


def test_the_signature_is_meta_s_hmac_of_the_raw_body():
    expected = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    assert sign(BODY, SECRET) == f"sha256={expected}"
    assert verify(BODY, f"sha256={expected}", SECRET)
    assert verify(BODY, f"sha256={expected.upper()}", SECRET)  # hex digits in either case


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=",
        "sha256=00",
        "sha1=" + hashlib.sha1(BODY).hexdigest(),
        sign(BODY, "another-secret"),
        sign(BODY + b" ", SECRET),
        sign(BODY, SECRET).removeprefix("sha256="),
        "sha256=é" * 8,
    ],
    ids=["missing", "empty", "no digest", "short", "sha1", "other secret", "other body", "no prefix", "not ascii"],
)
def test_anything_but_the_true_signature_is_refused(header):
    assert not verify(BODY, header, SECRET)


def test_one_changed_byte_of_the_body_fails_the_signature():
    header = sign(BODY, SECRET)
    assert not verify(BODY.replace(b"entry", b"entrY"), header, SECRET)
