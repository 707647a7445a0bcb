"""Test utilities for the WhatsApp channel, and for anyone testing against the WhatsApp Cloud API.

``FakeGraphAPI`` is a loopback fake of the Graph API over real HTTP (messages, media, read receipts, error
injection); ``WebhookDriver`` posts notifications to a webhook, signed as Meta signs them; ``payloads`` builds
them; ``running`` runs a connection for the length of a block. The pytest fixtures (``whatsapp_graph``,
``whatsapp_host``, ``whatsapp_account``, ``whatsapp_connection``, ``whatsapp_driver``) are registered by this
package's ``pytest11`` entry point.
"""

from ishiki_host.testing import running_connection as running

from ishiki_channel_whatsapp.testing.driver import DEFAULT_APP_SECRET, DEFAULT_VERIFY_TOKEN, SIGNED, WebhookDriver
from ishiki_channel_whatsapp.testing.graph import DEFAULT_ACCESS_TOKEN, FakeGraphAPI
from ishiki_channel_whatsapp.testing.payloads import (
    DEFAULT_DISPLAY_PHONE_NUMBER,
    DEFAULT_PHONE_NUMBER_ID,
    contact,
    media_message,
    message,
    next_wamid,
    notification,
    status,
    text_message,
)
from ishiki_channel_whatsapp.testing.records import Call, Fault, MediaFile, ReadReceipt, SentMessage

__all__ = [
    "DEFAULT_ACCESS_TOKEN",
    "DEFAULT_APP_SECRET",
    "DEFAULT_DISPLAY_PHONE_NUMBER",
    "DEFAULT_PHONE_NUMBER_ID",
    "DEFAULT_VERIFY_TOKEN",
    "SIGNED",
    "Call",
    "FakeGraphAPI",
    "Fault",
    "MediaFile",
    "ReadReceipt",
    "SentMessage",
    "WebhookDriver",
    "contact",
    "media_message",
    "message",
    "next_wamid",
    "notification",
    "running",
    "status",
    "text_message",
]
