"""Channels: the Channel base class, the built-in console channel, and outgoing-text helpers."""

from ishiki_host.channels.split import Measure, split_message, utf16_len

__all__ = ["Measure", "split_message", "utf16_len"]
