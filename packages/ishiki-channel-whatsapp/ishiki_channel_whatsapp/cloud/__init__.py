"""The ``cloud`` backend: the WhatsApp Business Cloud API, webhooks in through the host's HTTP ingress and the
Graph API out over httpx. ``CloudConnection`` (``connection``) is its ``ChannelConnection``."""
