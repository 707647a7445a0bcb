"""The ranking core of toolsearch: which deferred tools best match what the model asked for.

Tokens (``tokenize``) are the same for names, descriptions and queries:

- text is NFKC-normalized and case-folded; runs of letters and digits are words, everything else separates
  (so ``snake_case``, ``kebab-case``, ``dotted.names`` and spaces all split);
- words split further at camelCase humps (``readFile`` -> read, file; ``HTTPServer`` -> http, server) and at
  letter/digit boundaries (``base64`` -> base, 64);
- a light plural stem joins ``files``/``file`` and ``queries``/``query`` (ASCII words longer than 3 letters);
- CJK text (Han, kana, Hangul) has no spaces, so every character is a token and so is every pair of
  neighbouring characters (``发送消息`` -> 发, 送, 消, 息, 发送, 送消, 消息): a one-character query still matches,
  and a longer one favours tools that contain it as a phrase;
- a few English stop words are dropped from descriptions and queries (never from names).

Scoring is BM25 per field with one IDF over the whole catalogue. A name hit of a term is worth
``idf * (k1 + 1 + bm25_tf)``, which is more than any description hit of the same term can be
(``idf * bm25_tf``, at most ``idf * (k1 + 1)``). A query word of three or more letters that is only the prefix
of a name word (``calend`` / ``calendar``) counts 0.6 of that word's name hit, one that only occurs inside the
name (``file`` in ``readfile``) 0.4; a description word it prefixes counts 0.5. A query that spells the whole
name (``search files`` for ``searchFiles``) adds ``EXACT_NAME_BONUS``. Ties break by name, so results are
deterministic::

    from ishiki_host import ToolSpec
    from ishiki_host.tools.search_index import ToolIndex

    catalogue = [ToolSpec("send_email", "Send an email."), ToolSpec("read_file", "Read a file.")]
    discovered: set[str] = set()
    index = ToolIndex(catalogue)  # anything with .name and .description: ToolSpec, Tool
    hits = index.search("send email", exclude=discovered, max_results=5)
    # [SearchHit(name="send_email", score=...), ...]  best first; discovered tools never appear
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["EXACT_NAME_BONUS", "SearchHit", "Searchable", "ToolIndex", "search", "tokenize"]

K1 = 1.2
B = 0.75
EXACT_NAME_BONUS = 10.0
PREFIX_NAME_WEIGHT = 0.6
INSIDE_NAME_WEIGHT = 0.4
PREFIX_DESCRIPTION_WEIGHT = 0.5
MIN_PARTIAL_LENGTH = 3

_CJK = "\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_RUNS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")
_CJK_TOKEN = re.compile(rf"[{_CJK}]+")
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
    ]
)


class Searchable(Protocol):
    """Anything with a name and a description (``ToolSpec``, ``Tool``)."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    @property
    def description(self) -> str:
        """What the tool does."""
        ...


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked tool."""

    name: str
    score: float


def tokenize(text: str, *, stop_words: bool = True) -> list[str]:
    """The search tokens of ``text`` in order (see the module docstring); ``stop_words=False`` keeps them."""
    tokens: list[str] = []
    for run in _RUNS.finditer(unicodedata.normalize("NFKC", text)):
        if run["cjk"]:
            tokens.extend(_cjk_tokens(run["cjk"]))
            continue
        for part in _split_word(run["word"]):
            token = _stem(part.casefold())
            if not stop_words or token not in _STOP_WORDS:
                tokens.append(token)
    return tokens


def _cjk_tokens(run: str) -> list[str]:
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def _split_word(word: str) -> list[str]:
    """Split at camelCase humps, acronym ends (``HTTPServer``) and letter/digit boundaries."""
    parts: list[str] = []
    start = 0
    for i in range(1, len(word)):
        before, here = word[i - 1], word[i]
        after = word[i + 1] if i + 1 < len(word) else ""
        if (
            before.isdigit() != here.isdigit()
            or (before.islower() and here.isupper())
            or (before.isupper() and here.isupper() and after.islower())
        ):
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def _stem(token: str) -> str:
    if len(token) <= 3 or not (token.isascii() and token.isalpha()):
        return token
    if token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@dataclass(frozen=True, slots=True)
class _Doc:
    name: str
    name_tf: Counter[str]
    name_len: int
    compact: str
    description_tf: Counter[str]
    description_len: int

    @classmethod
    def of(cls, name: str, description: str) -> _Doc:
        name_tokens = tokenize(name, stop_words=False)
        description_tokens = tokenize(description)
        return cls(
            name=name,
            name_tf=Counter(name_tokens),
            name_len=len(name_tokens),
            compact="".join(name_tokens),
            description_tf=Counter(description_tokens),
            description_len=len(description_tokens),
        )


class ToolIndex:
    """A catalogue of tools, tokenized once, searched many times (``search`` with the discovered excluded)."""

    def __init__(self, tools: Iterable[Searchable]):
        self._docs = [_Doc.of(tool.name, tool.description) for tool in tools]
        self._postings: dict[str, list[int]] = {}
        for index, doc in enumerate(self._docs):
            for token in doc.name_tf.keys() | doc.description_tf.keys():
                self._postings.setdefault(token, []).append(index)
        self._vocabulary = sorted(self._postings)
        count = max(1, len(self._docs))
        self._avg_name = sum(doc.name_len for doc in self._docs) / count or 1.0
        self._avg_description = sum(doc.description_len for doc in self._docs) / count or 1.0

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, query: str, *, exclude: Collection[str] = (), max_results: int = 5) -> list[SearchHit]:
        """The best ``max_results`` tools for ``query`` with a positive score, best first, ties by name.

        Tools named in ``exclude`` (already discovered) are never returned.
        """
        if max_results < 1:
            raise ValueError(f"max_results must be at least 1, got {max_results}")
        terms = list(dict.fromkeys(tokenize(query)))
        scores: dict[int, float] = {}
        for term in terms:
            for index, score in self._term_scores(term).items():
                scores[index] = scores.get(index, 0.0) + score
        compact_query = "".join(tokenize(query, stop_words=False))
        for index in scores:
            if self._docs[index].compact == compact_query:
                scores[index] += EXACT_NAME_BONUS
        hits = [
            SearchHit(self._docs[index].name, score)
            for index, score in scores.items()
            if score > 0 and self._docs[index].name not in exclude
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.name))
        return hits[:max_results]

    def _term_scores(self, term: str) -> dict[int, float]:
        """Each document's best name hit plus best description hit for one query term."""
        name_scores: dict[int, float] = {}
        description_scores: dict[int, float] = {}
        for index in self._postings.get(term, ()):
            doc = self._docs[index]
            name_scores[index] = self._name_hit(term, doc)
            description_scores[index] = self._description_hit(term, doc)
        if len(term) >= MIN_PARTIAL_LENGTH and not _CJK_TOKEN.fullmatch(term):
            self._partial_hits(term, name_scores, description_scores)
        return {
            index: name_scores.get(index, 0.0) + description_scores.get(index, 0.0)
            for index in name_scores.keys() | description_scores.keys()
        }

    def _partial_hits(self, term: str, name_scores: dict[int, float], description_scores: dict[int, float]) -> None:
        start = bisect.bisect_right(self._vocabulary, term)
        for word in self._vocabulary[start:]:
            if not word.startswith(term):
                break
            for index in self._postings[word]:
                doc = self._docs[index]
                _keep_best(name_scores, index, PREFIX_NAME_WEIGHT * self._name_hit(word, doc))
                _keep_best(description_scores, index, PREFIX_DESCRIPTION_WEIGHT * self._description_hit(word, doc))
        inside = [
            index for index, doc in enumerate(self._docs) if term in doc.compact and name_scores.get(index, 0.0) == 0.0
        ]
        idf = self._idf(len(inside))
        for index in inside:
            doc = self._docs[index]
            score = INSIDE_NAME_WEIGHT * idf * (K1 + 1 + self._saturate(1, doc.name_len, self._avg_name))
            _keep_best(name_scores, index, score)

    def _name_hit(self, token: str, doc: _Doc) -> float:
        tf = doc.name_tf.get(token, 0)
        if not tf:
            return 0.0
        return self._idf(len(self._postings[token])) * (K1 + 1 + self._saturate(tf, doc.name_len, self._avg_name))

    def _description_hit(self, token: str, doc: _Doc) -> float:
        tf = doc.description_tf.get(token, 0)
        if not tf:
            return 0.0
        idf = self._idf(len(self._postings[token]))
        return idf * self._saturate(tf, doc.description_len, self._avg_description)

    def _idf(self, df: int) -> float:
        return math.log(1 + (len(self._docs) - df + 0.5) / (df + 0.5))

    @staticmethod
    def _saturate(tf: int, length: int, average: float) -> float:
        return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


def _keep_best(scores: dict[int, float], index: int, score: float) -> None:
    if score > scores.get(index, 0.0):
        scores[index] = score


def search(query: str, candidates: Iterable[Searchable], max_results: int = 5) -> list[SearchHit]:
    """Rank ``candidates`` for ``query`` (builds a throwaway ``ToolIndex``; keep one to search repeatedly)."""
    return ToolIndex(candidates).search(query, max_results=max_results)
