"""Addresses: sids, channel ids and targets (``ids``), runtime keys and homes (``keys``), and the
file-system-safe form of ids that come from outside (``segments``)."""

from ishiki_host.addresses.ids import ChannelKind, Target, channel_id, parse_channel_id, parse_sid
from ishiki_host.addresses.keys import RuntimeKey, RuntimeMode, runtime_dir
from ishiki_host.addresses.segments import MAX_SEGMENT, escape_segment, unescape_segment

__all__ = [
    "MAX_SEGMENT",
    "ChannelKind",
    "RuntimeKey",
    "RuntimeMode",
    "Target",
    "channel_id",
    "escape_segment",
    "parse_channel_id",
    "parse_sid",
    "runtime_dir",
    "unescape_segment",
]
