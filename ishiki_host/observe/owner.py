"""Whose model call this is: the profile and channel of the runtime it was made for.

The gateway's call listeners see a ``ModelCallRecord`` (member, tokens, latency), not who made the call. The
runtime sets itself as the current one in its own tasks (``ishiki_host.gateway.attribution``), so a listener
called inside a runtime's call finds it there.
"""

from __future__ import annotations

from ishiki_host.addresses.keys import RuntimeKey
from ishiki_host.gateway.attribution import current_runtime

__all__ = ["call_owner", "key_labels"]


def key_labels(key: RuntimeKey) -> tuple[str, str]:
    """``(profile, channel)`` of a runtime: its channel is ``platform:selfId``, empty in cross mode."""
    return key.profile, key.sid or ""


def call_owner() -> tuple[str, str]:
    """``(profile, channel)`` of the runtime the current model call is made for; empty strings outside one."""
    runtime = current_runtime()
    return key_labels(runtime.key) if runtime is not None else ("", "")
