"""Token estimates for when a provider gives no numbers (and for context budgets).

The default estimator counts about four characters per token for alphabetic scripts and one token per CJK
character (Chinese, Japanese kana, Korean hangul), which tokenizers split far finer. It is an estimate, and
every number it produces is flagged ``estimated`` where it is stored. Callers that want another counter pass
an ``Estimator`` (any ``str -> int`` function) where one is accepted.

``make_estimator()`` picks the counter a host uses everywhere (session sizes, the context engine's budget):
tiktoken's when the package is installed *and* its encoding is already on disk, else the estimate. tiktoken
downloads an encoding on first use; this host never lets it, so a machine without network access (or a test)
never waits on one. Point ``TIKTOKEN_CACHE_DIR`` at a directory holding the encoding file to use it offline.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ishiki_host.core.messages import Message
    from ishiki_host.core.model import ToolSpec

__all__ = [
    "DEFAULT_ENCODING",
    "Estimator",
    "EstimatorKind",
    "estimate_messages_tokens",
    "estimate_tokens",
    "host_estimator",
    "make_estimator",
    "tiktoken_estimator",
]

logger = logging.getLogger(__name__)

Estimator = Callable[[str], int]
EstimatorKind = Literal["auto", "estimate", "tiktoken"]
DEFAULT_ENCODING = "o200k_base"
# The encodings tiktoken fetches from one blob each; their cache file name is the SHA-1 of that URL.
_TIKTOKEN_BLOBS = {
    name: f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    for name in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base")
}

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


_CJK = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _CJK_RANGES) + "]")


def estimate_tokens(text: str) -> int:
    """About ``len(text) / 4`` tokens, counting each CJK character as one; at least 1 for non-empty text."""
    if not text:
        return 0
    if text.isascii():
        return max(1, (len(text) + 3) // 4)
    cjk = len(_CJK.findall(text))
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


def _tiktoken_cache_file(encoding: str) -> str | None:
    """Where tiktoken keeps ``encoding`` (its own lookup rules), or ``None`` if it has no cache for it."""
    blob = _TIKTOKEN_BLOBS.get(encoding)
    if blob is None:
        return None
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.environ.get("DATA_GYM_CACHE_DIR", os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    if not cache_dir:
        return None  # caching disabled: every use would download
    return os.path.join(cache_dir, hashlib.sha1(blob.encode()).hexdigest())


def tiktoken_estimator(encoding: str = DEFAULT_ENCODING) -> Estimator | None:
    """A counter using tiktoken's ``encoding``, or ``None`` unless tiktoken is installed and has it on disk."""
    try:
        import tiktoken  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    cached = _tiktoken_cache_file(encoding)
    if cached is None or not os.path.isfile(cached):
        return None
    try:
        codec = tiktoken.get_encoding(encoding)
    except Exception as exc:  # a damaged cache file, an incompatible version: fall back, never fail a turn
        logger.warning("tiktoken encoding %s is unusable (%s); token counts are estimated", encoding, exc)
        return None

    def count(text: str) -> int:
        return len(codec.encode(text, disallowed_special=())) if text else 0

    return count


def make_estimator(kind: EstimatorKind = "auto", *, encoding: str = DEFAULT_ENCODING) -> Estimator:
    """The token counter to use: ``auto`` prefers tiktoken (when usable offline), ``estimate`` never does.

    ``tiktoken`` insists on it and raises ``ValueError`` when it cannot be used (not installed, or the
    encoding was never downloaded).
    """
    if kind not in ("auto", "estimate", "tiktoken"):
        raise ValueError(f"estimator kind must be auto, estimate or tiktoken; got {kind!r}")
    if kind == "estimate":
        return estimate_tokens
    counter = tiktoken_estimator(encoding)
    if counter is not None:
        return counter
    if kind == "tiktoken":
        raise ValueError(
            f"tiktoken with encoding {encoding!r} is not usable offline: install tiktoken and put the encoding "
            "file in TIKTOKEN_CACHE_DIR"
        )
    return estimate_tokens


@functools.cache
def host_estimator() -> Estimator:
    """The counter a host uses everywhere (session sizes, summaries, budgets): ``make_estimator()``, chosen
    once per process (finding tiktoken's encoding on disk is not free)."""
    return make_estimator()
