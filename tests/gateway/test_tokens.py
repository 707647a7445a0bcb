"""The default token estimator."""

from __future__ import annotations

from ishiki_host.core.messages import ImagePart, Message, ToolCall
from ishiki_host.core.model import ToolSpec
from ishiki_host.core.tokens import estimate_messages_tokens, estimate_tokens


def test_about_four_characters_per_token() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


def test_cjk_characters_count_one_each() -> None:
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("こんにちは") == 5
    assert estimate_tokens("안녕하세요") == 5
    assert estimate_tokens("hello 世界") == 2 + 2  # "hello " is 6 chars -> 2, plus two ideographs
    assert estimate_tokens("café") == 1


def test_messages_and_tools() -> None:
    call = ToolCall("c1", "read", {"url": "local://a"})
    messages = [
        Message.system("x" * 40),
        Message.user("look", [ImagePart("data:image/png;base64,AA")]),
        Message.assistant("", [call]),
    ]
    tools = [ToolSpec("read", "Read a URL")]
    total = estimate_messages_tokens(messages, tools)
    assert total == (4 + 10) + (4 + 1 + 85) + (4 + 0 + 1 + 5) + (1 + 3 + 9)
    assert estimate_messages_tokens(messages, tools, estimator=len) > total
