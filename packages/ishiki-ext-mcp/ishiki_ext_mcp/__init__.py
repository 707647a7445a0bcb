"""ishiki-ext-mcp: Model Context Protocol servers for Ishiki Host personas (extension ``ishiki.ext.mcp``).

Enable it in a profile (``extends: {mcp: {enable: true}}``) and declare servers in ``mcp.json``; see the
package README for the file format, the keys, trust and the servers' lifecycle.
"""

from ishiki_ext_mcp.config import MCP_FILE, MCPConfig, ServerSpec, load_mcp_config
from ishiki_ext_mcp.errors import MCPCallFailed, MCPConfigInvalid
from ishiki_ext_mcp.extension import MCPExtension, MCPInstance
from ishiki_ext_mcp.listing import Listing
from ishiki_ext_mcp.manager import SERVICE, MCPManager
from ishiki_ext_mcp.names import sanitize, tool_names
from ishiki_ext_mcp.resources import SCHEME, resource_url
from ishiki_ext_mcp.runner import Backoff, ServerRunner

__all__ = [
    "MCP_FILE",
    "SCHEME",
    "SERVICE",
    "Backoff",
    "Listing",
    "MCPCallFailed",
    "MCPConfig",
    "MCPConfigInvalid",
    "MCPExtension",
    "MCPInstance",
    "MCPManager",
    "ServerRunner",
    "ServerSpec",
    "load_mcp_config",
    "resource_url",
    "sanitize",
    "tool_names",
]
