"""Token estimates for when a provider gives no numbers (and for context budgets).

The default estimator counts about four characters per token for alphabetic scripts and one token per CJK
character (Chinese, Japanese kana, Korean hangul), which tokenizers split far finer. It is an estimate, and
every number it produces is flagged ``estimated`` where it is stored. Callers that want another counter pass
an ``Estimator`` (any ``str -> int`` function) where one is accepted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ishiki_host.core.messages import Message
    from ishiki_host.core.model import ToolSpec

__all__ = ["Estimator", "estimate_messages_tokens", "estimate_tokens"]

Estimator = Callable[[str], int]

# Code-point ranges whose characters are roughly one token each.
_CJK_RANGES = (
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # full-width forms
    (0x20000, 0x2FFFF),  # CJK extensions B-F
)
# Per-message framing (role markers, separators) that chat templates add.
_MESSAGE_OVERHEAD = 4


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def estimate_tokens(text: str) -> int:
    """About ``len(text) / 4`` tokens, counting each CJK character as one; at least 1 for non-empty text."""
    if not text:
        return 0
    if text.isascii():
        return max(1, (len(text) + 3) // 4)
    cjk = sum(1 for char in text if _is_cjk(char))
    return max(1, cjk + (len(text) - cjk + 3) // 4)


def estimate_messages_tokens(
    messages: Iterable[Message], tools: Iterable[ToolSpec] = (), estimator: Estimator = estimate_tokens
) -> int:
    """The estimated prompt size of ``messages`` and ``tools`` (images count a flat 85 tokens, as low-res)."""
    total = 0
    for message in messages:
        total += _MESSAGE_OVERHEAD + estimator(message.text) + 85 * len(message.images)
        for call in message.tool_calls:
            total += estimator(call.name) + estimator(json.dumps(dict(call.arguments), ensure_ascii=False))
    for tool in tools:
        total += estimator(tool.name) + estimator(tool.description)
        total += estimator(json.dumps(dict(tool.parameters), ensure_ascii=False))
    return total
