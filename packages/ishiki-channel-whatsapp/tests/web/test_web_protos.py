"""What the device sends, built as neonize's protobuf messages; a download rebuilt from an inbound locator."""

from __future__ import annotations

import pytest
from neonize.proto import Neonize_pb2 as neo
from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as e2e

from ishiki_channel_whatsapp.web import protos, wire
from ishiki_channel_whatsapp.web.client import OutgoingMedia, QuoteRef
from ishiki_channel_whatsapp.web.testing import document, image, message_event

QUOTE = QuoteRef("3A0001", "123456789012345@lid", "what time?")
UPLOAD = neo.UploadResponse(
    url="https://mmg.whatsapp.net/o1/v/t62/abc",
    DirectPath="/o1/v/t62/abc",
    MediaKey=b"m" * 32,
    FileEncSHA256=b"e" * 32,
    FileSHA256=b"s" * 32,
    FileLength=5,
)


def test_a_text_is_a_conversation():
    assert protos.text_message("hi") == e2e.Message(conversation="hi")


def test_a_reply_carries_the_quoted_id_sender_and_text():
    message = protos.text_message("at noon", QUOTE)
    context = message.extendedTextMessage.contextInfo
    assert message.extendedTextMessage.text == "at noon"
    assert (context.stanzaID, context.participant) == ("3A0001", "123456789012345@lid")
    assert context.quotedMessage.conversation == "what time?"
    assert not context.mentionedJID  # digits after an @ in a reply are never turned into a mention


@pytest.mark.parametrize(
    ("kind", "field"), [("image", "imageMessage"), ("video", "videoMessage"), ("document", "documentMessage")]
)
def test_media_with_a_caption(kind, field):
    media = OutgoingMedia(kind, b"12345", "application/pdf" if kind == "document" else f"{kind}/x", "q.pdf", "see")
    message = protos.media_message(media, UPLOAD, QUOTE)
    part = getattr(message, field)
    assert (part.URL, part.directPath, part.mediaKey, part.fileLength) == (UPLOAD.url, UPLOAD.DirectPath, b"m" * 32, 5)
    assert (part.fileSHA256, part.fileEncSHA256, part.mimetype, part.caption) == (
        b"s" * 32,
        b"e" * 32,
        media.media_type,
        "see",
    )
    assert part.contextInfo.stanzaID == "3A0001"
    assert not part.HasField("JPEGThumbnail")


def test_a_document_is_named():
    message = protos.media_message(OutgoingMedia("document", b"x", "text/plain", "notes.txt"), UPLOAD)
    assert (message.documentMessage.fileName, message.documentMessage.title) == ("notes.txt", "notes.txt")


def test_audio_has_no_caption():
    message = protos.media_message(OutgoingMedia("audio", b"x", "audio/ogg", caption="ignored"), UPLOAD)
    assert message.HasField("audioMessage")
    assert not hasattr(message.audioMessage, "caption")


@pytest.mark.parametrize("content", [image(caption="c", size=77), document(name="d.pdf")])
def test_an_inbound_locator_rebuilds_the_media_message(content):
    media = wire.read_message(message_event(content, chat="491700000001@s.whatsapp.net")).media
    assert media is not None
    rebuilt = protos.download_message(media.locator)
    (field,) = [descriptor.name for descriptor, _ in rebuilt.ListFields()]
    original, again = getattr(content, field), getattr(rebuilt, field)
    for key in ("directPath", "mediaKey", "fileSHA256", "fileEncSHA256", "fileLength", "mimetype"):
        assert getattr(again, key) == getattr(original, key), key


@pytest.mark.parametrize(
    "locator",
    [
        {},
        {"kind": "hologram", "directPath": "/x"},
        {"kind": "image", "directPath": "/x"},
        {"kind": "image", "directPath": "/x", "mediaKey": "%%", "fileSHA256": "", "fileEncSHA256": ""},
    ],
)
def test_a_bad_locator_is_a_value_error(locator):
    with pytest.raises(ValueError, match="locator"):
        protos.download_message(locator)


def test_jids():
    assert protos.jid_proto("120363000000000001@g.us") == neo.JID(
        User="120363000000000001", Server="g.us", Device=0, RawAgent=0, Integrator=0, IsEmpty=False
    )
