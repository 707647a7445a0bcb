"""The errors of the MCP extension, as branches of the host's one exception tree.

    ConfigError (ishiki_host.errors)
    └── MCPConfigInvalid        mcp.json, or the extension's ``servers`` selection, names the file and key path
    ToolError (ishiki_host.errors)
    └── MCPCallFailed           a call to a server failed: not running, timed out, died or answered an error

An ``MCPCallFailed`` raised by a tool handler becomes the tool's error result (the turn goes on); its message is
written for the model and the operator alike.
"""

from __future__ import annotations

from ishiki_host.errors import ConfigError, ToolError

__all__ = ["MCPCallFailed", "MCPConfigInvalid"]


class MCPConfigInvalid(ConfigError):
    """``mcp.json`` or the ``servers`` selection is wrong; ``file`` and ``path`` say where."""


class MCPCallFailed(ToolError):
    """A call to an MCP server failed; the message says which server, why, and what happens next."""
