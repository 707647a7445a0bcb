"""Sessions of a runtime (docs/sessions.md): segments of its fact log, ``/clear`` and ``/compact``, the
summarizer that turns conversation into memory, and fact-log entries as the transcript it reads.

- ``manager``: ``SessionManager`` (clear, compact, carried messages, the ``sessions`` table);
- ``summarizer``: ``Summarizer`` (memories of exchanges, session summaries), ``remember_turn``;
- ``transcript``: entries as plain text for the summarizer, the summary a session carries.
"""

from ishiki_host.sessions.manager import SessionChange, SessionManager, SessionSize
from ishiki_host.sessions.summarizer import Summarizer, needs_compaction, remember_turn

__all__ = [
    "SessionChange",
    "SessionManager",
    "SessionSize",
    "Summarizer",
    "needs_compaction",
    "remember_turn",
]
