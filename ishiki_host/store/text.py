"""Text for the FTS5 index, and safe FTS5 queries built from arbitrary user text.

The index tokenizer (``unicode61``) splits on spaces and punctuation, which does not work for scripts written
without spaces: a Japanese sentence would be one token, and a search for one of its words would find nothing.
So before indexing, every run of CJK characters (Han, kana, Hangul) is rewritten as its unigrams and
overlapping bigrams, the usual CJK n-gram approach; other text passes through unchanged.

A query is never user text handed to ``MATCH``: it is rebuilt from the words found in the text, each one a
double-quoted FTS5 string (a quote inside doubled), joined with ``OR``, so no operator, column filter, prefix
star or parenthesis of the user's ever reaches the FTS5 parser. BM25 then ranks rows matching more, rarer
words higher (see ``ishiki_host.store.repos.memory_search``).
"""

from __future__ import annotations

import re

from ishiki_host.core.text import clean_text

__all__ = ["MAX_QUERY_TERMS", "clean_text", "index_text", "match_query", "query_terms", "quote_terms"]

MAX_QUERY_TERMS = 64

_CJK = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A word: letters and digits (never "_" or marks), minus the CJK characters handled as n-grams.
_WORD = re.compile(f"(?:(?![{_CJK}])[^\\W_])+")


def _ngrams(run: str) -> list[str]:
    """Unigrams and overlapping bigrams of a CJK run."""
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(content: str) -> str:
    """What the FTS index stores for ``content``: the text with each CJK run replaced by its n-grams."""
    content = clean_text(content)
    return _CJK_RUN.sub(lambda m: " " + " ".join(_ngrams(m.group())) + " ", content)


def query_terms(text: str, *, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct search terms of ``text``, in order of first appearance, at most ``limit``.

    Words of other scripts as they are (the tokenizer folds case itself; deduplicated ignoring case); a CJK run
    as its bigrams, or itself when one character long (kana unigrams would match nearly every row).
    """
    text = clean_text(text)
    terms: dict[str, str] = {}
    position = 0
    for run in _CJK_RUN.finditer(text):
        _add_words(terms, text[position : run.start()])
        chars = run.group()
        for gram in [chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)]:
            terms.setdefault(gram, gram)
        position = run.end()
    _add_words(terms, text[position:])
    return list(terms.values())[:limit]


def _add_words(terms: dict[str, str], text: str) -> None:
    for word in _WORD.findall(text):
        terms.setdefault(word.lower(), word)


def quote_terms(terms: list[str]) -> str:
    """An FTS5 ``MATCH`` expression: each term a quoted string (inner quotes doubled), joined with OR."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def match_query(text: str, *, limit: int = MAX_QUERY_TERMS) -> str | None:
    """An FTS5 ``MATCH`` expression for ``text`` (quoted terms joined by OR), or ``None`` if it has no words."""
    terms = query_terms(text, limit=limit)
    return quote_terms(terms) if terms else None
