"""The console's thinking line: what the running turn is doing, in a few words.

``activity_line(activity, now)`` renders a ``TurnActivity``: ``thinking 3s · default`` while the model is
called, ``running web_search 5s`` while a tool runs, ``writing…`` while the reply streams in, nothing once
the turn is done. The seconds are whole seconds since the turn started, by the host's clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.channels.base import TurnActivity

__all__ = ["activity_line"]


def activity_line(activity: TurnActivity | None, now: float) -> str | None:
    """The line for ``activity`` at clock time ``now`` (``None``: no turn runs, nothing to show)."""
    if activity is None or activity.state == "done":
        return None
    if activity.state == "writing":
        return "writing…"
    seconds = f"{max(0, int(now - activity.started_at))}s"
    if activity.state == "tool":
        return f"running {activity.tool or 'a tool'} {seconds}"
    return f"thinking {seconds} · {activity.model}" if activity.model else f"thinking {seconds}"
