"""Markdown-ish to Telegram HTML: the safe subset, always balanced, never longer than the source."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ishiki_host import split_message, utf16_len

from ishiki_channel_telegram import render_html
from ishiki_channel_telegram.testing._html import HtmlRejected, parse_html


@pytest.mark.parametrize(
    ("source", "html"),
    [
        ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
        ("*it* and _it_ but snake_case_name and 2*3*4", "<i>it</i> and <i>it</i> but snake_case_name and 2*3*4"),
        ("~~gone~~", "<s>gone</s>"),
        ("`a < b && c`", "<code>a &lt; b &amp;&amp; c</code>"),
        ("``code with ` inside``", "<code>code with ` inside</code>"),
        ("[site](https://e.com/a?b=1&c=2)", '<a href="https://e.com/a?b=1&amp;c=2">site</a>'),
        ("[not a link](javascript:alert(1))", "[not a link](javascript:alert(1))"),
        (
            "```python\nif a < b:\n    pass\n```",
            '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>',
        ),
        ("```\nplain\n```", "<pre>plain</pre>"),
        ("```js\nunclosed", '<pre><code class="language-js">unclosed</code></pre>'),
        ("**[docs](https://e.com) first**", '<b><a href="https://e.com">docs</a> first</b>'),
        ("**a *b** c*", "<b>a *b</b> c*"),
        ("<script>alert('x')</script> & co", "&lt;script&gt;alert('x')&lt;/script&gt; &amp; co"),
        ("a ** b ** c", "a ** b ** c"),
        ("nul\x00byte", "nul\ufffdbyte"),
        ("[x](https://x.io/`code`)", "[x](https://x.io/<code>code</code>)"),  # code in a URL: not a link
    ],
)
def test_rendering(source, html):
    assert render_html(source) == html


TOKENS = [*"ab _*~`[]()<>&\"'\n#-", "😀", "é", "```", "```py\n", "**", "__", "~~", "](https://x.io/", "&amp;", "\n\n"]
markdownish = st.lists(st.sampled_from(TOKENS), max_size=120).map("".join)


@settings(max_examples=400, deadline=None)
@given(markdownish)
def test_rendered_html_is_always_accepted_and_never_longer(source):
    html = render_html(source)
    try:
        shown, _ = parse_html(html)
    except HtmlRejected as exc:
        pytest.fail(f"Telegram would refuse {html!r}: {exc}")
    assert utf16_len(shown) <= utf16_len(source)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from([*TOKENS, "word " * 40]), min_size=400, max_size=900).map("".join))
def test_every_split_part_fits_after_rendering(source):
    for part in split_message(source, 4096, measure=utf16_len):
        shown, _ = parse_html(render_html(part))
        assert utf16_len(shown) <= 4096
