"""The store check of ``ishiki doctor``: a PostgreSQL ``store`` is reachable and its schema one this host can use.

With ``store: file`` there is nothing to check (the data directory's own checks cover it). With a PostgreSQL
URL: psycopg must be installed (the ``postgresql`` extra), the database must answer within ``--timeout``
(``store.pg.pool.open_pool``, whose error names the server without its password and says what the driver
said), and its schema must not be newer than this host knows: an older one, or none, is fine, the first
host to start migrates it; a newer one makes every host of this version refuse to start.
"""

from __future__ import annotations

import anyio

from ishiki_host.channels.base import Finding

__all__ = ["store_findings"]

_WHAT = "store"


async def store_findings(store: str, seconds: float) -> list[Finding]:
    """The findings about ``store`` (``ishiki.yaml``'s key), each network call cut at ``seconds``."""
    if store == "file":
        return []
    try:
        import psycopg

        from ishiki_host.store.pg.pool import StoreUnreachable, open_pool, safe_url
        from ishiki_host.store.pg.schema import SCHEMA_VERSION, schema_version
    except ImportError as exc:
        detail = f"a PostgreSQL store is configured, but {exc.name or 'psycopg'} is not installed"
        return [Finding("error", _WHAT, detail, "pip install 'ishiki-host[postgresql]'")]
    where = safe_url(store)
    try:
        pool = await open_pool(store, min_size=1, max_size=1, connect_seconds=seconds)
    except StoreUnreachable as exc:
        fix = (
            "check the URL's host, port, user, password and database, and that the server accepts this "
            "machine (`psql` with the same URL says the same)"
        )
        return [Finding("error", _WHAT, str(exc), fix)]
    try:
        with anyio.fail_after(seconds):
            found = await schema_version(pool)
    except (TimeoutError, psycopg.Error) as exc:
        return [Finding("error", _WHAT, f"{where} answered, then not: {str(exc) or 'timed out'}", "look at the server")]
    finally:
        await pool.close()
    return [_schema_finding(where, found, SCHEMA_VERSION)]


def _schema_finding(where: str, found: int, known: int) -> Finding:
    if found > known:
        detail = f"{where}: its schema is version {found}, newer than this host knows (version {known})"
        fix = "upgrade ishiki-host here to the fleet's version, or point store at another database"
        return Finding("error", _WHAT, detail, fix)
    if found == known:
        return Finding("ok", _WHAT, f"{where} answers, schema version {found}")
    state = "no schema yet" if found == 0 else f"schema version {found}, this host's is {known}"
    return Finding("ok", _WHAT, f"{where} answers, {state}: migrated when a host starts")
