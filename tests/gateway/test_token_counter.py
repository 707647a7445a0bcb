"""The token counter factory: tiktoken only when installed with its encoding on disk, else the estimate.

tiktoken itself is not a dependency; a stand-in module written to a temporary directory plays it, so these
tests never download anything and do not need the package.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ishiki_host.core.tokens import estimate_tokens, make_estimator, tiktoken_estimator

STAND_IN = """
calls = []

class _Codec:
    def encode(self, text, disallowed_special=()):
        return text.split()

def get_encoding(name):
    calls.append(name)
    if name == "cl100k_base":
        raise ValueError("damaged cache file")
    return _Codec()
"""
BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A ``tiktoken`` module on ``sys.path`` and an empty cache directory (``TIKTOKEN_CACHE_DIR``)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "tiktoken.py").write_text(STAND_IN, encoding="utf-8")
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    yield cache
    sys.modules.pop("tiktoken", None)


def cache_file(cache: Path, encoding: str) -> Path:
    path = cache / hashlib.sha1(BLOB.format(encoding).encode()).hexdigest()
    path.write_bytes(b"ranks")
    return path


def test_without_tiktoken_the_estimate_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # an import of it fails, as when not installed
    assert tiktoken_estimator() is None
    assert make_estimator() is estimate_tokens
    with pytest.raises(ValueError, match="not usable offline"):
        make_estimator("tiktoken")


def test_an_encoding_never_downloaded_is_not_fetched(stand_in: Path) -> None:
    assert tiktoken_estimator("o200k_base") is None
    assert sys.modules["tiktoken"].calls == []  # type: ignore[attr-defined]
    assert make_estimator() is estimate_tokens


def test_a_cached_encoding_is_used(stand_in: Path) -> None:
    cache_file(stand_in, "o200k_base")
    count = make_estimator()
    assert count is not estimate_tokens
    assert count("one two three") == 3
    assert count("") == 0
    assert make_estimator("estimate") is estimate_tokens
    assert make_estimator("tiktoken")("a b") == 2


def test_a_broken_encoding_falls_back(stand_in: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache_file(stand_in, "cl100k_base")
    with caplog.at_level(logging.WARNING):
        assert tiktoken_estimator("cl100k_base") is None
    assert "damaged cache file" in caplog.text
    assert tiktoken_estimator("gpt2") is None  # not a single-file encoding: unknown offline


def test_caching_disabled_means_no_tiktoken(stand_in: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache_file(stand_in, "o200k_base")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tiktoken_estimator() is None


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, estimate or tiktoken"):
        make_estimator("bpe")  # type: ignore[arg-type]


_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF),
               (0xFF00, 0xFFEF), (0x20000, 0x2FFFF))  # fmt: skip


def reference_estimate(text: str) -> int:
    """The estimate's definition, one character at a time."""
    if not text:
        return 0
    cjk = sum(1 for ch in text if any(low <= ord(ch) <= high for low, high in _CJK_RANGES))
    return max(1, cjk + (len(text) - cjk + 3) // 4)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_the_estimate_counts_cjk_characters_one_each(text: str) -> None:
    assert estimate_tokens(text) == reference_estimate(text)
