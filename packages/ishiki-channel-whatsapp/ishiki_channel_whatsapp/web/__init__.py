"""The ``web`` backend: a linked device on a personal or business WhatsApp number, like WhatsApp Web.

It is built on neonize (the Python binding of whatsmeow, WhatsApp's multi-device protocol in Go). neonize is
imported only through ``_neonize`` (which undoes what its import does to the process), and only by the modules
that need it, when a ``web`` account runs (importing it loads its Go core): ``neonize_client``
(``NeonizeClient``, the thin module that drives the library), ``protos`` (the messages it sends) and the test
kit. The rest is plain Python over the ``WebClient`` seam (``client``), tested with neonize's real event types
and the stand-in ``FakeWebClient`` (``testing``):

- ``config``: ``WEB_SCHEMA`` (the account's ``web`` key) and ``WebSettings``;
- ``connection``: ``create_web_connection`` and ``WebConnection`` (lives, back-off, readiness, sending, status);
- ``life``: one life of the device (pairing, connecting, reconnecting, logged out);
- ``wire``: neonize's events read into typed records; ``jids``: WhatsApp addresses and the host's ids;
- ``shaping``, ``media``, ``intake``: messages into ``IshikiEvent``s, lazy attachments, exactly-once intake;
- ``outbound``: sending (text in WhatsApp's marks: ``ishiki_channel_whatsapp.formatting``); ``pairing``: the QR
  code and pairing code shown;
- ``session``: the session files in the state directory; ``recent``: own ids and quotable messages.

Nothing is imported here, so ``import ishiki_channel_whatsapp.web.config`` stays light.
"""
