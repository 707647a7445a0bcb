"""The container's health check: exit 0 when the host's ``GET /healthz`` answers ``ok``, or when ``ishiki.yaml``
serves no HTTP (``http.listen`` unset, or port 0, which no outside check can know); 1 otherwise.

    python healthcheck.py [DIR]        # DIR defaults to /config; the Dockerfile's HEALTHCHECK runs it

``ishiki.yaml`` is read by the host's own loader, ``${VAR}`` expansion and all, so the check asks where the host
listens, not where a copy of the rule guesses. A wildcard address (``0.0.0.0``, ``::``) is asked on loopback.
One line on stdout says what was found (``docker inspect`` shows it).
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path

from ishiki_host.config.host import load_host_config

TIMEOUT_SECONDS = 5.0
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1"}
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""No proxy: an ``HTTP_PROXY`` of the container must not carry a loopback check elsewhere."""


def health_url(config_dir: Path) -> str | None:
    """The URL of ``/healthz`` for ``config_dir``'s host, or ``None`` when it serves no HTTP a check can reach."""
    listen = load_host_config(config_dir)[0].http.listen
    if listen is None or listen[1] == 0:
        return None
    address = _LOOPBACK.get(listen[0], listen[0])
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{listen[1]}/healthz"


def check(config_dir: Path) -> tuple[bool, str]:
    """Whether the host is healthy, and the line that says why."""
    url = health_url(config_dir)
    if url is None:
        return True, f"ok: {config_dir / 'ishiki.yaml'} serves no HTTP (http.listen unset or port 0): nothing to ask"
    try:
        with _DIRECT.open(url, timeout=TIMEOUT_SECONDS) as response:
            body = response.read(64).decode(errors="replace").strip()
    except (urllib.error.URLError, OSError) as exc:
        return False, f"unhealthy: {url}: {getattr(exc, 'reason', exc)}"
    return (body == "ok"), f"{'ok' if body == 'ok' else 'unhealthy'}: {url} answered {body!r}"


def main(argv: list[str]) -> int:
    """Command line: see the module's docstring."""
    healthy, line = check(Path(argv[1] if len(argv) > 1 else "/config"))
    print(line, flush=True)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
