"""The logs page (``/logs``): the host's last lines (``log_lines`` of them, from ``ctx.logs``) at a level and
above, followed live by server-sent events from ``/logs/stream?level=&after=`` (each event one line's HTML,
its ``id`` the line's ``seq``). ``/api/logs?level=&limit=`` is the JSON twin.

The stream waits on ``ctx.logs.wait_after``, which the host's stop cancels like any wait: the ingress closes
the iterator and the generator ends there. The dashboard's own token, should a line hold it (a generated
token is logged once), is masked.
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ishiki_host import HttpResponse, HttpStream, LogLine, sse_event

from ishiki_dashboard.app import Problem, json_response
from ishiki_dashboard.html import Safe, esc, form_field, mask, tag

if TYPE_CHECKING:
    from ishiki_dashboard.app import Dashboard, DashRequest

__all__ = ["LEVELS", "register"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def register(dash: Dashboard) -> None:
    """``/logs``, ``/logs/stream`` and ``/api/logs``."""

    async def page(req: DashRequest) -> str:
        level = _level(req)
        lines = dash.ctx.logs.recent(int(dash.config["log_lines"]), min_level=level)
        return render(dash, level, lines)

    async def stream(req: DashRequest) -> HttpStream:
        level = _level(req)
        try:
            after = int(req.query.get("after", "0") or 0)
        except ValueError as exc:
            raise Problem(400, "after is a line number", field="after") from exc
        return HttpStream.sse(follow(dash, level, after))

    async def api(req: DashRequest) -> HttpResponse:
        level = _level(req)
        limit = _limit(req.query.get("limit"), int(dash.config["log_lines"]))
        lines = dash.ctx.logs.recent(limit, min_level=level)
        return json_response({"level": level, "lines": [_json(dash, line) for line in lines]})

    dash.page("/logs", page, title="Logs", nav="logs")
    dash.stream("/logs/stream", stream)
    dash.api("/api/logs", api)


def _level(req: DashRequest) -> str:
    level = (req.query.get("level") or "INFO").upper()
    if level not in LEVELS:
        raise Problem(400, f"level is one of {', '.join(LEVELS)}", field="level")
    return level


def _limit(raw: str | None, default: int) -> int:
    try:
        return max(1, min(2000, int(raw))) if raw else default
    except ValueError as exc:
        raise Problem(400, "limit is a number of lines", field="limit") from exc


def _message(dash: Dashboard, line: LogLine) -> str:
    return line.message.replace(dash.token, mask(dash.token)) if dash.token in line.message else line.message


def _json(dash: Dashboard, line: LogLine) -> dict[str, object]:
    return {"seq": line.seq, "ts": line.ts, "level": line.level, "logger": line.logger, "message": _message(dash, line)}


def line_html(dash: Dashboard, line: LogLine) -> Safe:
    """One line as the page shows it."""
    when = datetime.datetime.fromtimestamp(line.ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    text = f"{when} {line.level:<7} {line.logger}: {_message(dash, line)}"
    return tag("div", text, cls=f"line lvl-{line.level}", data_seq=line.seq)


async def follow(dash: Dashboard, level: str, after: int) -> AsyncIterator[str]:
    """The lines above ``after`` at ``level`` and above, as they come, one event each; ends when closed."""
    seen = after
    while True:
        await dash.ctx.logs.wait_after(seen)
        newest = dash.ctx.logs.last_seq
        for line in dash.ctx.logs.recent(2000, min_level=level, after=seen):
            if line.seq <= newest:
                yield sse_event(line_html(dash, line), id=str(line.seq))
        seen = newest


def render(dash: Dashboard, level: str, lines: tuple[LogLine, ...]) -> str:
    """The page's body: the level filter and the lines, followed live."""
    after = lines[-1].seq if lines else dash.ctx.logs.last_seq
    options = [(name, name) for name in LEVELS]
    picker = (
        f'<form method="get" action="{esc(dash.url("/logs"))}" class="inline toolbar">'
        f"{form_field('level', 'Level', value=level, options=options, autosubmit=True)}"
        '<button type="submit" class="secondary">Show</button></form>'
    )
    source = f"{dash.url('/logs/stream')}?level={level}&after={after}"
    body = "".join(line_html(dash, line) for line in lines)
    limit = int(dash.config["log_lines"])
    return picker + str(tag("div", Safe(body), cls="logs", data_sse=source, data_sse_max=limit))
