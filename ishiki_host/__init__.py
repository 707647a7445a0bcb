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
from ishiki_host.plugins.base import (
    Channel,
    ContextEngine,
    Extension,
    ModelAPI,
    Plugin,
    ToolcallEngine,
    WakeupEngine,
)
from ishiki_host.plugins.hookspecs import hookimpl

__all__ = [
    "Channel",
    "Clock",
    "ContextEngine",
    "Entry",
    "Extension",
    "FakeClock",
    "ImagePart",
    "LanguageModel",
    "Message",
    "ModelAPI",
    "ModelRequest",
    "ModelResult",
    "Plugin",
    "SystemClock",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "ToolcallEngine",
    "Usage",
    "WakeupEngine",
    "__version__",
    "errors",
    "hookimpl",
]
