"""The dashboard's pages: each module's ``register(dash)`` adds its routes (``ishiki_dashboard.app``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ishiki_dashboard.pages import (
    chat,
    conversations,
    heartbeats,
    logs,
    memories,
    models,
    overview,
    pairing,
    plugins,
)

if TYPE_CHECKING:
    from ishiki_dashboard.app import Dashboard

__all__ = ["register_all"]


def register_all(dash: Dashboard) -> None:
    """Register every page of the dashboard on ``dash``."""
    for module in (overview, conversations, chat, models, heartbeats, pairing, memories, plugins, logs):
        module.register(dash)
