"""A webhook notification read into its changes, trusting nothing of its shape.

Meta's notification is ``{"object": "whatsapp_business_account", "entry": [{"id", "changes": [{"field":
"messages", "value": {...}}]}]}``; a ``messages`` change's value holds ``metadata`` (``phone_number_id``,
``display_phone_number``), ``contacts`` (``wa_id`` and ``profile.name``), and any of ``messages``, ``statuses``
and ``errors``. ``read_notification`` checks every container is what it should be (an object a ``dict``, an
array a ``list``): a notification that breaks that raises ``NotificationInvalid`` naming the part, never a
crash further in. The messages and statuses themselves are checked where they are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUSINESS_ACCOUNT", "Change", "Notification", "NotificationInvalid", "read_notification"]

BUSINESS_ACCOUNT = "whatsapp_business_account"


class NotificationInvalid(ValueError):
    """The notification is JSON, but not of the shape Meta documents; the message names the part."""


@dataclass(frozen=True, slots=True)
class Change:
    """One ``messages`` change: which number it is for, who wrote (``names``: wa_id -> profile name), and its
    messages, statuses and errors as sent."""

    phone_number_id: str | None
    display_phone_number: str | None = None
    names: Mapping[str, str] = field(default_factory=dict)
    messages: tuple[Any, ...] = ()
    statuses: tuple[Any, ...] = ()
    errors: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Notification:
    """The ``messages`` changes of a notification; ``object`` is what it says it is about, ``ignored`` the
    fields of the other changes (``account_update``, ``message_template_status_update``...)."""

    object: str | None
    changes: tuple[Change, ...] = ()
    ignored: tuple[str, ...] = ()


def read_notification(data: Any) -> Notification:
    """The changes of a decoded notification (see the module docstring)."""
    if not isinstance(data, dict):
        raise NotificationInvalid(f"the notification is a {type(data).__name__}, not an object")
    kind = data.get("object") if isinstance(data.get("object"), str) else None
    if kind != BUSINESS_ACCOUNT:
        return Notification(kind)
    changes: list[Change] = []
    ignored: list[str] = []
    for e, entry in enumerate(_list(data.get("entry"), "entry")):
        entry = _dict(entry, f"entry[{e}]")
        for c, change in enumerate(_list(entry.get("changes"), f"entry[{e}].changes")):
            where = f"entry[{e}].changes[{c}]"
            change = _dict(change, where)
            name = change.get("field")
            if name != "messages":
                ignored.append(str(name))
                continue
            changes.append(_change(_dict(change.get("value"), f"{where}.value"), f"{where}.value"))
    return Notification(kind, tuple(changes), tuple(ignored))


def _change(value: Mapping[str, Any], where: str) -> Change:
    metadata = value.get("metadata")
    metadata = _dict(metadata, f"{where}.metadata") if metadata is not None else {}
    number_id = metadata.get("phone_number_id")
    display = metadata.get("display_phone_number")
    return Change(
        phone_number_id=str(number_id)
        if isinstance(number_id, str | int) and not isinstance(number_id, bool)
        else None,
        display_phone_number=display if isinstance(display, str) else None,
        names=_names(_list(value.get("contacts", []), f"{where}.contacts")),
        messages=tuple(_list(value.get("messages", []), f"{where}.messages")),
        statuses=tuple(_list(value.get("statuses", []), f"{where}.statuses")),
        errors=tuple(_list(value.get("errors", []), f"{where}.errors")),
    )


def _names(contacts: list[Any]) -> dict[str, str]:
    names: dict[str, str] = {}
    for contact in contacts:
        if not isinstance(contact, dict) or not isinstance(contact.get("wa_id"), str):
            continue
        profile = contact.get("profile")
        name = profile.get("name") if isinstance(profile, dict) else None
        if isinstance(name, str) and name.strip():
            names[contact["wa_id"]] = name
    return names


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise NotificationInvalid(f"{where} is not an array ({type(value).__name__})")
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise NotificationInvalid(f"{where} is not an object ({type(value).__name__})")
    return value
