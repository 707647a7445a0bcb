"""The errors of the MCP extension, as branches of the host's one exception tree.

    ConfigError (ishiki_host.errors)
    └── MCPConfigInvalid        mcp.json, or the extension's ``servers`` selection, names the file and key path
    ToolError (ishiki_host.errors)
    └── MCPCallFailed           a call to a server failed: not running, timed out, died or answered an error

An ``MCPCallFailed`` raised by a tool handler becomes the tool's error result (the turn goes on); its message is
written for the model and the operator alike.

Inside the package, a server request fails with ``ServerUnavailable``, ``CallError`` or ``CallTimedOut``;
they never leave it: tools turn them into ``MCPCallFailed``, the ``mcp://`` scheme into ``ResourceError``.
"""

from __future__ import annotations

from ishiki_host.errors import ConfigError, ToolError

__all__ = ["CallError", "CallTimedOut", "MCPCallFailed", "MCPConfigInvalid", "ServerUnavailable"]


class MCPConfigInvalid(ConfigError):
    """``mcp.json`` or the ``servers`` selection is wrong; ``file`` and ``path`` say where."""


class MCPCallFailed(ToolError):
    """A call to an MCP server failed; the message says which server, why, and what happens next."""


class ServerUnavailable(Exception):
    """Internal: the server is not running, or went away during the request."""


class CallError(Exception):
    """Internal: the server answered a request with an error (``code``: the JSON-RPC code, when there is one)."""

    def __init__(self, message: str, code: int | None):
        super().__init__(message)
        self.code = code


class CallTimedOut(CallError):
    """Internal: the server did not answer within ``timeout_ms``."""

    def __init__(self, message: str):
        super().__init__(message, None)
