"""Built-in toolcall engines (group ``ishiki.engine.toolcall``) and the text tool-call protocols.

The protocols are pure: they render tools and history into text and read a model's answer back into tool
calls (``ParsedAnswer``). The engines that wrap a profile's model with them build on these modules.
"""

from ishiki_host.engines.toolcall._answer import ParsedAnswer

__all__ = ["ParsedAnswer"]
