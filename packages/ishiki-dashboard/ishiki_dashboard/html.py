"""HTML built in Python: escaping by default, a few element helpers, the page layout, and secret masking.

Every helper escapes the text it is given unless it is ``Safe`` (markup already made by a helper or by
``safe()`` on a literal), so a page is a composition of helpers whose only raw HTML is the helpers' own. No
helper writes an inline script, an inline style or an event handler attribute: the Content-Security-Policy
refuses them, and behaviour comes from ``data-*`` attributes read by ``static/dashboard.js``.

``masked(obj)`` replaces the values of secret-looking keys (``api_key``, ``token``, ``password``...) in JSON
with ``mask(value)`` (``••••abcd``); run it on anything from the host before it is rendered or returned.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence

from ishiki_host import Json

__all__ = [
    "NAV",
    "Safe",
    "badge",
    "button_post",
    "csrf_field",
    "esc",
    "form_field",
    "join",
    "layout",
    "link",
    "mask",
    "masked",
    "pre_json",
    "safe",
    "section",
    "table",
    "tag",
]

NAV: tuple[tuple[str, str, str], ...] = (
    ("overview", "Overview", "/"),
    ("conversations", "Conversations", "/conversations"),
    ("chat", "Chat", "/chat"),
    ("models", "Models", "/models"),
    ("heartbeats", "Heartbeats", "/heartbeats"),
    ("pairing", "Pairing", "/pairing"),
    ("memories", "Memories", "/memories"),
    ("plugins", "Plugins", "/plugins"),
    ("logs", "Logs", "/logs"),
)
"""The navigation: (``nav`` key a page names, label, path below the prefix)."""

_SECRET_KEY = re.compile(r"(^|[_-])(key|token|secret|password|passwd|authorization)$|apikey$|^api[_-]?key$", re.I)

_STATE_CLASSES = {
    "ready": "ok",
    "running": "ok",
    "ok": "ok",
    "connected": "ok",
    "on": "ok",
    "enabled": "ok",
    "waiting": "warn",
    "starting": "warn",
    "paused": "warn",
    "reconnecting": "warn",
    "invalid": "bad",
    "failed": "bad",
    "error": "bad",
    "crashed": "bad",
}


class Safe(str):
    """Markup that is already safe to send: ``esc`` returns it unchanged."""

    __slots__ = ()


def safe(markup: str) -> Safe:
    """Mark ``markup`` (a literal of the caller's, never data) as safe."""
    return Safe(markup)


def esc(value: object) -> Safe:
    """``value`` as HTML text: ``Safe`` unchanged, ``None`` empty, anything else ``str()`` escaped (quotes too)."""
    if isinstance(value, Safe):
        return value
    return Safe("" if value is None else html.escape(str(value), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    """The escaped ``parts`` one after another (``sep`` is markup)."""
    return Safe(sep.join(esc(p) for p in parts))


def _attrs(attributes: Mapping[str, object]) -> str:
    """`` name="value"`` for each attribute whose value is not ``None`` or ``False`` (``True``: bare)."""
    out = []
    for name, value in attributes.items():
        if value is None or value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return "".join(out)


def tag(element: str, content: object = "", /, **attributes: object) -> Safe:
    """``<element attrs>content</element>``; an attribute ``cls`` is written ``class``, ``_`` in names as ``-``."""
    attrs = {("class" if k == "cls" else k.rstrip("_").replace("_", "-")): v for k, v in attributes.items()}
    return Safe(f"<{element}{_attrs(attrs)}>{esc(content)}</{element}>")


def link(href: str, text: object, *, cls: str | None = None) -> Safe:
    """``<a href>text</a>``."""
    return tag("a", text, href=href, cls=cls)


def badge(state: object) -> Safe:
    """The state as a coloured badge (``ok``, ``warn``, ``bad`` or ``off`` by the state's meaning)."""
    kind = _STATE_CLASSES.get(str(state).lower(), "off")
    return tag("span", state, cls=f"badge badge-{kind}")


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], *, empty: str = "nothing yet") -> Safe:
    """A table; cells are escaped unless ``Safe``. With no rows: one row saying ``empty``."""
    head = "".join(tag("th", h) for h in headers)
    body = "".join("<tr>" + "".join(tag("td", c) for c in row) + "</tr>" for row in rows)
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="empty">{esc(empty)}</td></tr>'
    return Safe(f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def section(title: object, body: object) -> Safe:
    """``<section><h2>title</h2>body</section>``."""
    return Safe(f"<section>{tag('h2', title)}{esc(body)}</section>")


def csrf_field(csrf: str) -> Safe:
    """The hidden ``csrf`` field a plain form posts."""
    return Safe(f'<input type="hidden" name="csrf" value="{esc(csrf)}">')


def form_field(
    name: str,
    label: object,
    *,
    value: object = "",
    kind: str = "text",
    options: Sequence[tuple[str, str]] | None = None,
    required: bool = False,
    placeholder: str | None = None,
    hint: object = None,
    autosubmit: bool = False,
) -> Safe:
    """A labelled input (``kind``: ``text``, ``password``, ``number``, ``textarea``, ``checkbox``; a select when
    ``options`` (value, label) are given; ``autosubmit``: its form is sent when it changes), with the
    ``data-error-for`` slot where the JS shows its error."""
    ident = f"f-{name}"
    if options is not None:
        choices = "".join(tag("option", text, value=v, selected=str(v) == str(value)) for v, text in options)
        auto = " data-autosubmit" if autosubmit else ""
        control = Safe(f'<select id="{esc(ident)}" name="{esc(name)}"{auto}>{choices}</select>')
    elif kind == "textarea":
        control = tag("textarea", value, id=ident, name=name, required=required, placeholder=placeholder)
    elif kind == "checkbox":
        checkbox = {"id": ident, "type": kind, "name": name, "value": "on", "checked": bool(value)}
        control = Safe(f"<input{_attrs(checkbox)}>")
    else:
        attrs = {"id": ident, "type": kind, "name": name, "value": value, "required": required}
        control = Safe(f"<input{_attrs({**attrs, 'placeholder': placeholder})}>")
    hint_html = tag("small", hint, cls="hint") if hint else ""
    error = tag("span", "", cls="field-error", data_error_for=name)
    return Safe(f'<div class="field">{tag("label", label, for_=ident)}{control}{hint_html}{error}</div>')


def button_post(
    url: str,
    label: object,
    *,
    confirm: str | None = None,
    then: str | None = None,
    body: Mapping[str, str] | None = None,
    cls: str | None = None,
) -> Safe:
    """A button the JS posts to ``url`` (with the CSRF header; ``body`` as form fields), asking ``confirm``
    first when given, then reloading the page or going to ``then``."""
    data = json.dumps(dict(body)) if body else None
    return tag(
        "button",
        label,
        type="button",
        cls=cls,
        data_post=url,
        data_confirm=confirm,
        data_then=then,
        data_body=data,
    )


def pre_json(value: Json) -> Safe:
    """``value`` as indented JSON in a ``<pre>``, masked."""
    return tag("pre", json.dumps(masked(value), indent=2, sort_keys=True, ensure_ascii=False), cls="json")


def mask(secret: object) -> str:
    """``••••`` and at most the last 4 characters (none of a secret shorter than 12)."""
    text = "" if secret is None else str(secret)
    return "••••" + (text[-4:] if len(text) >= 12 else "")


def _is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def masked(value: Json) -> Json:
    """``value`` with the values of secret-looking keys (``key``, ``token``, ``secret``, ``password``,
    ``api_key``, ``apiKey``, ``authorization``...) masked, at any depth."""
    if isinstance(value, Mapping):
        return {
            k: (mask(v) if _is_secret_key(str(k)) and isinstance(v, str | int) and v != "" else masked(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    return value


def _nav(prefix: str, active: str | None) -> str:
    items = []
    for key, label, path in NAV:
        current = "page" if key == active else None
        items.append(f"<li>{tag('a', label, href=prefix + path, aria_current=current)}</li>")
    return "".join(items)


def layout(title: str, body: str, *, nav_active: str | None, csrf: str, user: str, prefix: str) -> str:
    """The whole page around ``body`` (markup): the navigation, the signed-in user with a log-out button, the
    CSRF token in ``<meta name="csrf-token">`` for the JS, the stylesheet and the script."""
    logout = (
        f'<form method="post" action="{esc(prefix)}/logout" class="logout">{csrf_field(csrf)}'
        f'<span class="user">{esc(user)}</span><button type="submit">Log out</button></form>'
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="csrf-token" content="{esc(csrf)}">'
        f"<title>{esc(title)} · Ishiki</title>"
        f'<link rel="stylesheet" href="{esc(prefix)}/static/dashboard.css">'
        f'<script src="{esc(prefix)}/static/dashboard.js" defer></script>'
        "</head><body>"
        f'<header><a class="brand" href="{esc(prefix)}/">Ishiki</a><nav><ul>{_nav(prefix, nav_active)}</ul></nav>'
        f"{logout}</header>"
        f'<main><h1>{esc(title)}</h1><div class="flash" data-flash hidden></div>{body}</main>'
        "</body></html>\n"
    )
