"""Narrative engines for Ishiki Host: a ``narrative`` context engine and a ``narrative`` toolcall engine.

Used together in a profile::

    context: {engine: narrative}
    toolcall: {engine: narrative}

The context engine keeps a resumable story state in the fact log; the toolcall engine runs a Narrator, an
Action Decoder and a Replyer inside each model step. See docs/engines/narrative.md.
"""

from ishiki_engine_narrative.config import CONTEXT_SCHEMA, TOOLCALL_SCHEMA
from ishiki_engine_narrative.context import NarrativeContext, NarrativeContextEngine
from ishiki_engine_narrative.errors import NarrativeError, RoleOutputInvalid
from ishiki_engine_narrative.records import ROLE_KIND, UPDATE_KIND
from ishiki_engine_narrative.story import ENTRY_TYPE, Decision, Narrative, parse_decision, parse_narrative
from ishiki_engine_narrative.toolcall import NarrativeModel, NarrativeToolcall, NarrativeToolcallEngine

__all__ = [
    "CONTEXT_SCHEMA",
    "ENTRY_TYPE",
    "ROLE_KIND",
    "TOOLCALL_SCHEMA",
    "UPDATE_KIND",
    "Decision",
    "Narrative",
    "NarrativeContext",
    "NarrativeContextEngine",
    "NarrativeError",
    "NarrativeModel",
    "NarrativeToolcall",
    "NarrativeToolcallEngine",
    "RoleOutputInvalid",
    "parse_decision",
    "parse_narrative",
]
