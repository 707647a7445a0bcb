"""The narrative engines' errors: a branch of the host's ``EngineError`` (logged; the engine falls back).

EngineError                         (ishiki_host.errors)
└── NarrativeError                  a narrative role or update could not do its part
    └── RoleOutputInvalid           a role answered something other than what was asked
"""

from __future__ import annotations

from ishiki_host.errors import EngineError

__all__ = ["NarrativeError", "RoleOutputInvalid"]


class NarrativeError(EngineError):
    """A narrative role (Narrator, Action Decoder, Replyer) or the narrative update could not do its part."""


class RoleOutputInvalid(NarrativeError):
    """A role's answer is not what was asked: not the strict JSON, an unknown intent, a call breaking its schema."""
