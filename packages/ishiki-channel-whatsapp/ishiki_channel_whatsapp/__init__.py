"""WhatsApp channel for Ishiki Host, registered as ``whatsapp`` in ``ishiki.channel``.

``WhatsAppChannel`` is the entry-point class; ``create(host, account)`` gives a connection per account: a
``CloudConnection`` (the WhatsApp Business Cloud API: webhooks in through the host's HTTP ingress, the Graph
API out) for ``backend: cloud``, a linked device for ``backend: web``. Test utilities (a loopback fake Graph
API, a webhook driver that signs as Meta does, pytest fixtures) are in ``ishiki_channel_whatsapp.testing``.
"""

from ishiki_channel_whatsapp.channel import WhatsAppChannel
from ishiki_channel_whatsapp.cloud.connection import CloudConnection
from ishiki_channel_whatsapp.cloud.graph import GraphAPI
from ishiki_channel_whatsapp.cloud.signature import sign, verify
from ishiki_channel_whatsapp.cloud.startup import PhoneNumber
from ishiki_channel_whatsapp.config import ACCOUNT_SCHEMA, WEB_SCHEMA, CloudAccount, Template
from ishiki_channel_whatsapp.errors import (
    WhatsAppAuthError,
    WhatsAppBadRequest,
    WhatsAppError,
    WhatsAppRateLimited,
    WhatsAppUnavailable,
    WhatsAppWindowClosed,
)

__all__ = [
    "ACCOUNT_SCHEMA",
    "WEB_SCHEMA",
    "CloudAccount",
    "CloudConnection",
    "GraphAPI",
    "PhoneNumber",
    "Template",
    "WhatsAppAuthError",
    "WhatsAppBadRequest",
    "WhatsAppChannel",
    "WhatsAppError",
    "WhatsAppRateLimited",
    "WhatsAppUnavailable",
    "WhatsAppWindowClosed",
    "sign",
    "verify",
]
