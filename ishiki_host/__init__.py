"""Ishiki Host: run LLM personas in chat channels.

This module is the public API plugins may use; everything else is internal. ``__all__`` is exact and sorted
(a test keeps it so).
"""

from ishiki_host import errors
from ishiki_host._version import __version__
from ishiki_host.core import (
    Clock,
    Entry,
    FakeClock,
    ImagePart,
    LanguageModel,
    Message,
    ModelRequest,
    ModelResult,
    SystemClock,
    TextPart,
    Tool,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)

__all__ = [
    "Clock",
    "Entry",
    "FakeClock",
    "ImagePart",
    "LanguageModel",
    "Message",
    "ModelRequest",
    "ModelResult",
    "SystemClock",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "__version__",
    "errors",
]
