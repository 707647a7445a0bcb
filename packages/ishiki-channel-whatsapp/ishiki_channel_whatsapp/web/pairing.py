"""What the operator sees while a device is linked: a QR code drawn with text blocks, or a pairing code.

Both go to the host's stderr (``out``), where ``ishiki run`` shows its log: the QR code is drawn by ``segno``
(a pure-Python QR encoder, also what neonize itself uses) in half-block characters, two modules per character
row, so a 60-module code fits in about 30 lines. WhatsApp rotates QR codes every 20 s (the first lasts 60 s):
each new code is drawn again. A pairing code is printed once per attempt. One log line says the same for logs
that do not go to a terminal.
"""

from __future__ import annotations

import io
import logging
from typing import TextIO

import segno

__all__ = ["PairingPrompt", "render_qr"]


def render_qr(data: str) -> str:
    """``data`` as a QR code in text blocks (light modules are drawn, for terminals with light text)."""
    out = io.StringIO()
    segno.make_qr(data, error="L").terminal(out=out, compact=True, border=2)
    return out.getvalue()


class PairingPrompt:
    """Shows one account's pairing prompts (``label`` names it) on ``out``; ``shown`` counts them."""

    def __init__(self, out: TextIO, logger: logging.Logger, label: str):
        self._out = out
        self._logger = logger
        self._label = label
        self.shown = 0

    def qr(self, data: str) -> None:
        """Draw the QR code of ``data``, with how to scan it."""
        self._write(
            f"\nWhatsApp account {self._label}: scan this code with the phone of the account "
            "(WhatsApp > Settings > Linked devices > Link a device):\n" + render_qr(data)
        )
        self._logger.warning(
            "whatsapp account %s: waiting for the QR code to be scanned (drawn on stderr)", self._label
        )

    def code(self, code: str, phone: str) -> None:
        """Print the pairing code for ``phone``, with where to type it."""
        self._write(
            f"\nWhatsApp account {self._label}: on the phone of +{phone}, open WhatsApp > Settings > Linked devices "
            f"> Link a device > Link with phone number instead, and enter the code\n\n    {code}\n"
        )
        self._logger.warning("whatsapp account %s: pairing code for +%s: %s", self._label, phone, code)

    def _write(self, text: str) -> None:
        self.shown += 1
        try:
            self._out.write(text + "\n")
            self._out.flush()
        except (OSError, ValueError) as exc:  # a closed or broken stderr must not stop the channel
            self._logger.error("whatsapp account %s: could not show the pairing prompt: %s", self._label, exc)
