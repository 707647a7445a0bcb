"""The agent core: turns, the fact log, messages, tools and the ``LanguageModel`` protocol.

Nothing here knows about the host, platforms or configuration files.
"""

from ishiki_host.core.clock import Clock, FakeClock, SystemClock
from ishiki_host.core.entries import Entry
from ishiki_host.core.messages import ImagePart, Message, Part, TextPart, ToolCall
from ishiki_host.core.model import (
    LanguageModel,
    ModelRequest,
    ModelResult,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from ishiki_host.core.tools import Tool, ToolContext, ToolResult, TrustLevel

__all__ = [
    "Clock",
    "Entry",
    "FakeClock",
    "ImagePart",
    "LanguageModel",
    "Message",
    "ModelRequest",
    "ModelResult",
    "Part",
    "StreamDone",
    "StreamEvent",
    "SystemClock",
    "TextDelta",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolContext",
    "ToolResult",
    "ToolSpec",
    "TrustLevel",
    "Usage",
]
