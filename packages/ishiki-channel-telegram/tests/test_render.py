"""Markdown (parsed by markdown-it-py) to Telegram HTML: what each construct becomes, markup Telegram always
accepts, and parts that fit the limit without cutting a code block or an entity that fits one part."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ishiki_host import utf16_len

from ishiki_channel_telegram import render_html
from ishiki_channel_telegram.render import render_parts
from ishiki_channel_telegram.testing._html import HtmlRejected, parse_html


@pytest.mark.parametrize(
    ("source", "html"),
    [
        ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
        ("*it* and _it_ but snake_case_name and 2 * 3", "<i>it</i> and <i>it</i> but snake_case_name and 2 * 3"),
        ("~~gone~~", "<s>gone</s>"),
        ("`a < b && c`", "<code>a &lt; b &amp;&amp; c</code>"),
        ("``code with ` inside``", "<code>code with ` inside</code>"),
        ("[site](https://e.com/a?b=1&c=2)", '<a href="https://e.com/a?b=1&amp;c=2">site</a>'),
        ("[not a link](javascript:alert(1))", "[not a link](javascript:alert(1))"),
        ("[relative](docs/x.md)", "relative"),
        ("![a cat](https://e.com/cat.png)", '<a href="https://e.com/cat.png">a cat</a>'),
        (
            "```python\nif a < b:\n    pass\n```",
            '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>',
        ),
        ("```\nplain\n```", "<pre>plain</pre>"),
        ("```js\nunclosed", '<pre><code class="language-js">unclosed</code></pre>'),
        ("    indented code", "<pre>indented code</pre>"),
        ("**[docs](https://e.com) first**", '<b><a href="https://e.com">docs</a> first</b>'),
        ("[`code` in a link](https://e.com)", '<a href="https://e.com">code in a link</a>'),
        ("**a *b** c*", "<i>a b c</i>"),  # CommonMark's reading; the inner italic is not opened twice
        ("<script>alert('x')</script> & co", "&lt;script&gt;alert('x')&lt;/script&gt; &amp; co"),
        ("a ** b ** c", "a ** b ** c"),
        ("nul\x00byte", "nul\ufffdbyte"),
        ("# Title\n\ntext", "<b>Title</b>\n\ntext"),
        ("## **Bold** title", "<b>Bold title</b>"),
        ("- one\n- two\n  - nested", "• one\n• two\n  • nested"),
        ("3. three\n4. four", "3. three\n4. four"),
        ("1. first\n   second line", "1. first\n   second line"),
        ("> quoted\n> > twice", "<blockquote>quoted\ntwice</blockquote>"),
        ("> **bold** in a quote", "<blockquote><b>bold</b> in a quote</blockquote>"),
        ("| a | bb |\n|---|---|\n| 1 | 2 |", "<pre>a | bb\n--+---\n1 | 2</pre>"),
        ("above\n\n---\n\nbelow", "above\n\n────────────\n\nbelow"),
        ("line one\nline two", "line one\nline two"),
    ],
)
def test_rendering(source, html):
    assert render_html(source) == html


def test_a_long_code_block_is_closed_and_reopened_in_every_part():
    code = "\n".join(f"value_{i} = {i}  # a line of code" for i in range(300))
    parts = render_parts(f"Here:\n\n```python\n{code}\n```\n\nDone.", 4096)
    assert len(parts) == 4
    assert parts[0].html == "Here:"  # the block does not fit after it: the cut comes before the block
    assert parts[-1].html.endswith("</code></pre>\n\nDone.")
    for part in parts[1:]:
        assert part.html.startswith('<pre><code class="language-python">value_')
        assert utf16_len(part.plain) <= 4096
    lines = "\n".join(part.plain for part in parts[1:]).removesuffix("\n\nDone.").split("\n")
    assert lines == code.split("\n")  # every line once, none cut


def test_a_bold_span_that_fits_is_never_cut():
    filler = "word " * 800  # 4,000 units of plain text
    bold = "**" + "strong " * 30 + "end**"
    parts = render_parts(filler + bold, 4096)
    assert len(parts) == 2
    assert parts[1].html.startswith("<b>strong")
    assert parts[1].html.endswith("end</b>")


def test_emoji_count_twice_and_a_flag_is_never_split():
    parts = render_parts("🇫🇷" * 3000, 4096)
    assert [utf16_len(part.plain) for part in parts] == [4096, 4096, 3808]
    assert all(len(part.plain) % 2 == 0 for part in parts)  # whole flags (two regional indicators each)


TOKENS = [
    *"ab _*~`[]()<>&\"'\n#-|>1.",
    "😀",
    "é",
    "```",
    "```py\n",
    "**",
    "__",
    "~~",
    "](https://x.io/",
    "](tg://user?id=1)",
    "&amp;",
    "\n\n",
    "\n- ",
    "\n1. ",
    "\n> ",
    "\n    ",
    "| a | b |\n|---|---|\n",
    "\n# ",
]
markdown = st.lists(st.sampled_from(TOKENS), max_size=150).map("".join)
ALLOWED = {"b", "i", "s", "code", "pre", "a", "blockquote"}
TAG = re.compile(r"<(/?)([a-z-]+)[^>]*>")


def _check_markup(html: str) -> None:
    """Only Telegram's tags, balanced, nested as it allows; ``<``, ``>`` only in tags; ``&`` only escaped."""
    stack: list[str] = []
    for match in TAG.finditer(html):
        closing, name = match.group(1) == "/", match.group(2)
        assert name in ALLOWED, html
        if closing:
            assert stack[-1:] == [name], html
            stack.pop()
            continue
        if name == "code" and stack[-1:] == ["pre"]:
            stack.append("code")  # <pre><code class=...>: the one allowed pairing
            continue
        assert not {"pre", "code"} & set(stack), f"a tag inside code: {html!r}"
        if name in ("a", "code", "pre"):
            assert "a" not in stack, f"{name} inside a link: {html!r}"
        if name == "pre":
            assert set(stack) <= {"blockquote"}, html
        if name == "blockquote":
            assert "blockquote" not in stack, html
        stack.append(name)
    assert not stack, html
    text = TAG.sub("", html)
    assert not {"<", ">"} & set(text), html
    assert re.fullmatch(r"(?:[^&]|&(?:lt|gt|amp|quot);)*", text, re.DOTALL), html


@settings(max_examples=500, deadline=None)
@given(markdown)
def test_any_markdown_renders_to_html_telegram_accepts(source):
    html = render_html(source)
    _check_markup(html)
    try:
        parse_html(html)
    except HtmlRejected as exc:
        pytest.fail(f"Telegram would refuse {html!r}: {exc}")


@settings(max_examples=200, deadline=None)
@given(markdown, st.integers(min_value=8, max_value=200))
def test_every_part_is_accepted_fits_and_together_they_show_everything(source, limit):
    parts = render_parts(source, limit)
    for part in parts:
        _check_markup(part.html)
        shown, _ = parse_html(part.html)
        assert shown == part.plain
        assert 0 < utf16_len(shown) <= limit
    whole, _ = parse_html(render_html(source))
    assert "".join("".join(part.plain for part in parts).split()) == "".join(whole.split())


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([*TOKENS, "word " * 40, "```\n" + "code line\n" * 60]), min_size=200, max_size=500))
def test_long_texts_fit_the_message_limit(tokens):
    for part in render_parts("".join(tokens), 4096):
        shown, _ = parse_html(part.html)
        assert utf16_len(shown) <= 4096
