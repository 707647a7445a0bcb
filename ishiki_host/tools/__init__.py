"""Kernel tools: ``read`` (here), ``send_message``, ``finish``, ``wait``; codemode and toolsearch."""

from ishiki_host.tools.read import make_read_tool, render_read_result

__all__ = ["make_read_tool", "render_read_result"]
