"""toolsearch ranking: tokens, field weights, partial matches, unicode, exclusion and deterministic ties."""

from __future__ import annotations

import random

import pytest

from ishiki_host.core.model import ToolSpec
from ishiki_host.tools.search_index import EXACT_NAME_BONUS, SearchHit, ToolIndex, search, tokenize

VERBS = ["get", "list", "create", "delete", "update", "search", "send", "read", "write", "sync", "export", "share"]
NOUNS = [
    "email", "file", "calendar event", "contact", "invoice", "image", "message", "note", "task", "user",
    "report", "playlist", "weather forecast", "ticket", "repository", "photo", "document", "reminder", "order",
    "payment",
]  # fmt: skip
SERVICES = ["mail", "storage", "billing", "crm", "media", "office", "support"]
CJK_TOOLS = [
    ToolSpec("fasong_xiaoxi", "向频道发送消息。"),
    ToolSpec("tianqi_yubao", "查询城市的天气预报。"),
    ToolSpec("nihongo_kensaku", "ウェブを検索します。"),
    ToolSpec("poisk_knig", "Поиск книг в библиотеке."),
]


def styled(verb: str, noun: str, style: str) -> str:
    words = [verb, *noun.split()]
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    return words[0] + "".join(word.title() for word in words[1:])


def catalogue(seed: int = 20240601) -> list[ToolSpec]:
    """200 tools: 196 verb/noun tools in random naming styles, some mentioning calendars only in prose, + 4 CJK."""
    rng = random.Random(seed)
    pairs = rng.sample([(verb, noun) for verb in VERBS for noun in NOUNS], 196)
    tools = []
    for verb, noun in pairs:
        description = f"{verb.title()} a {noun} in the {rng.choice(SERVICES)} service."
        if noun != "calendar event" and rng.random() < 0.1:
            description += " The result also shows on the calendar."
        tools.append(ToolSpec(styled(verb, noun, rng.choice(["snake", "kebab", "camel"])), description))
    return tools + CJK_TOOLS


@pytest.fixture(scope="module")
def tools() -> list[ToolSpec]:
    return catalogue()


@pytest.fixture(scope="module")
def index(tools: list[ToolSpec]) -> ToolIndex:
    return ToolIndex(tools)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("readFile", ["read", "file"]),
        ("HTTPServer2Go", ["http", "server", "2", "go"]),
        ("search_files", ["search", "file"]),
        ("web-search.v2", ["web", "search", "v", "2"]),
        ("base64Encode", ["base", "64", "encode"]),
        ("Find the queries of users", ["find", "query", "user"]),
        ("ＦＵＬＬ　ｗｉｄｔｈ", ["full", "width"]),
        ("Café ÜBER", ["café", "über"]),
        ("发送消息", ["发", "送", "消", "息", "发送", "送消", "消息"]),
        ("天 Go語", ["天", "go", "語"]),
        ("status process", ["status", "process"]),
    ],
)
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_stop_words_are_kept_on_request() -> None:
    assert tokenize("getURLForID", stop_words=False) == ["get", "url", "for", "id"]
    assert tokenize("getURLForID") == ["get", "url", "id"]


def test_the_catalogue_has_200_distinct_tools(tools: list[ToolSpec]) -> None:
    assert len({tool.name for tool in tools}) == 200


def test_every_tool_is_the_top_hit_for_its_own_name_in_words(tools: list[ToolSpec], index: ToolIndex) -> None:
    for tool in tools[:196]:
        words = " ".join(tokenize(tool.name))
        assert index.search(words, max_results=1)[0].name == tool.name, words


def test_name_hits_rank_above_description_only_hits(tools: list[ToolSpec], index: ToolIndex) -> None:
    hits = index.search("calendar", max_results=200)
    in_name = [hit.name for hit in hits if "calendar" in tokenize(hit.name)]
    prose_only = [hit.name for hit in hits if hit.name not in in_name]
    assert len(in_name) == sum("calendar" in tokenize(tool.name) for tool in tools)
    assert prose_only  # the catalogue has tools that mention calendars only in their description
    assert [hit.name for hit in hits] == in_name + prose_only


def test_one_name_hit_beats_a_description_full_of_the_word() -> None:
    tools = [
        ToolSpec("store", "Archive, archive, archive: archives every archive into the archive."),
        ToolSpec("archive_items", "Put things away."),
    ]
    assert [hit.name for hit in search("archive", tools)] == ["archive_items", "store"]


def test_a_two_word_query_prefers_the_tool_that_has_both(index: ToolIndex) -> None:
    hits = index.search("send email")
    assert hits[0].name in {"send_email", "send-email", "sendEmail"}
    assert all("email" in tokenize(hit.name) or "send" in tokenize(hit.name) for hit in hits)


def test_a_word_prefix_finds_the_word(index: ToolIndex) -> None:
    hits = index.search("invoi", max_results=20)
    assert hits
    assert all("invoice" in tokenize(hit.name) for hit in hits)


def test_spelling_the_whole_name_in_order_earns_the_exact_name_bonus() -> None:
    tools = [ToolSpec("searchFiles", "Find files by pattern."), ToolSpec("search_notes", "Find notes.")]
    exact = {hit.name: hit.score for hit in search("search files", tools)}
    shuffled = {hit.name: hit.score for hit in search("files search", tools)}
    assert exact["searchFiles"] == pytest.approx(shuffled["searchFiles"] + EXACT_NAME_BONUS)
    assert exact["search_notes"] == pytest.approx(shuffled["search_notes"])


def test_a_tool_named_exactly_like_the_query_comes_first() -> None:
    tools = [ToolSpec("sync", "Run it."), ToolSpec("sync_now", "Sync: sync the sync state and sync again.")]
    assert [hit.name for hit in search("sync", tools)] == ["sync", "sync_now"]


def test_a_word_prefix_in_the_name_beats_a_match_inside_a_glued_name() -> None:
    tools = [ToolSpec("autocalendar", "Plan."), ToolSpec("sync_calendar", "Plan.")]
    assert [hit.name for hit in search("calend", tools)] == ["sync_calendar", "autocalendar"]


def test_a_glued_query_finds_the_name(tools: list[ToolSpec]) -> None:
    target = next(tool.name for tool in tools if tokenize(tool.name) == ["read", "file"])
    assert search("readfile", tools)[0].name == target


def test_discovered_tools_are_never_candidates(index: ToolIndex) -> None:
    first = index.search("email", max_results=50)
    discovered = {hit.name for hit in first[:3]}
    again = index.search("email", exclude=discovered, max_results=50)
    assert [hit.name for hit in again] == [hit.name for hit in first[3:]]


def test_results_are_deterministic_and_ties_break_by_name() -> None:
    twins = [ToolSpec(name, "Look up a thing.") for name in ("lookup_b", "lookup_c", "lookup_a")]
    hits = search("lookup", twins)
    assert [hit.name for hit in hits] == ["lookup_a", "lookup_b", "lookup_c"]
    assert len({hit.score for hit in hits}) == 1
    assert search("lookup", list(reversed(twins))) == hits


def test_the_best_results_are_cut_at_max_results(index: ToolIndex) -> None:
    assert len(index.search("a note or a file", max_results=5)) == 5
    with pytest.raises(ValueError, match="max_results must be at least 1, got 0"):
        index.search("file", max_results=0)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("消息", "fasong_xiaoxi"),
        ("发送消息", "fasong_xiaoxi"),
        ("天气", "tianqi_yubao"),
        ("検索", "nihongo_kensaku"),
        ("книг", "poisk_knig"),
        ("ＥＭＡＩＬ", None),
    ],
)
def test_unicode_queries(index: ToolIndex, query: str, expected: str | None) -> None:
    hits = index.search(query)
    if expected is None:  # full-width Latin is the same word as plain Latin
        assert hits == index.search("email")
    else:
        assert hits[0].name == expected


def test_a_single_cjk_character_still_matches(index: ToolIndex) -> None:
    assert index.search("气")[0].name == "tianqi_yubao"


@pytest.mark.parametrize("query", ["", "   ", "the of and", "!!! ---"])
def test_an_empty_query_finds_nothing(index: ToolIndex, query: str) -> None:
    assert index.search(query) == []


def test_a_query_with_no_hits_finds_nothing(index: ToolIndex) -> None:
    assert index.search("zebra quantum") == []


def test_search_over_no_candidates() -> None:
    assert search("file", []) == []
    assert len(ToolIndex([])) == 0


def test_hits_carry_positive_scores_best_first(index: ToolIndex) -> None:
    hits = index.search("export report")
    assert all(isinstance(hit, SearchHit) and hit.score > 0 for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
