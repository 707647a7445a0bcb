"""A PostgreSQL store's URL: whether ``store`` names one, and how to show it without its password.

Kept apart from the parts that talk to the server so that a host on the file store, which may not have the
``postgresql`` extra (psycopg) installed, can ask these questions too.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["is_postgres_url", "safe_url"]


def is_postgres_url(store: str) -> bool:
    """Whether ``store`` (``ishiki.yaml``'s ``store``) names a PostgreSQL database rather than the files."""
    return store.startswith(("postgresql://", "postgres://"))


def safe_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))
