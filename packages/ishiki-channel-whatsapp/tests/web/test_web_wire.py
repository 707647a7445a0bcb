"""Reading neonize's events: every kind of content, WhatsApp's envelopes, and what is malformed."""

from __future__ import annotations

import pytest
from ishiki_host.errors import EventInvalid
from neonize.proto import Neonize_pb2 as neo
from neonize.proto.waCommon.WACommon_pb2 import MessageKey
from neonize.proto.waE2E import WAWebProtobufsE2E_pb2 as e2e

from ishiki_channel_whatsapp.web import wire
from ishiki_channel_whatsapp.web.jids import Jid
from ishiki_channel_whatsapp.web.testing import (
    document,
    edit,
    image,
    jid,
    logged_out,
    message_event,
    qr_event,
    revoke,
    text,
)

ALICE = "491700000001@s.whatsapp.net"
GROUP = "120363000000000001@g.us"


def _read(content, **keys):
    return wire.read_message(message_event(content, chat=keys.pop("chat", ALICE), **keys))


def test_a_plain_text():
    message = _read(text("hello"), push_name="Alice", timestamp_ms=1_700_000_123_456)
    assert (message.kind, message.type_name, message.text) == ("text", "conversation", "hello")
    assert message.chat == message.sender == Jid("491700000001", "s.whatsapp.net")
    assert (message.push_name, message.timestamp, message.from_me) == ("Alice", 1_700_000_123.456, False)


def test_seconds_are_read_as_seconds():
    assert _read(text("old core"), timestamp_ms=1_700_000_000).timestamp == 1_700_000_000.0


def test_mentions_and_a_quote():
    content = text(
        "@bot look", mentions=["491511234567@s.whatsapp.net"], quote=("Q1", "491511234567:3@s.whatsapp.net", "x")
    )
    context = _read(content).context
    assert context == wire.Context(
        "Q1", Jid("491511234567", "s.whatsapp.net"), "x", (Jid("491511234567", "s.whatsapp.net"),)
    )


def test_a_long_quote_is_cut():
    context = _read(text("reply", quote=("Q1", ALICE, "y" * 5000))).context
    assert context is not None
    assert len(context.quoted_text) == 1001
    assert context.quoted_text.endswith("…")


def test_a_quoted_image_is_shown_as_its_kind():
    content = e2e.Message(
        extendedTextMessage=e2e.ExtendedTextMessage(
            text="nice", contextInfo=e2e.ContextInfo(stanzaID="Q2", participant=ALICE, quotedMessage=image())
        )
    )
    assert _read(content).context.quoted_text == "[image]"


def test_a_lid_sender_with_its_number():
    message = _read(text("hi"), chat=GROUP, sender="123456789012345:7@lid", sender_alt=ALICE)
    assert message.sender == Jid("123456789012345", "lid")
    assert message.person == Jid("491700000001", "s.whatsapp.net")


def test_a_lid_sender_alone_is_its_lid():
    message = _read(text("hi"), chat=GROUP, sender="123456789012345@lid")
    assert message.person.wa_id == "123456789012345@lid"


def test_an_image_with_its_download_coordinates():
    message = _read(image(caption="look", size=2048))
    assert (message.kind, message.text) == ("media", "look")
    media = message.media
    assert media is not None
    assert (media.kind, media.media_type, media.name, media.size) == ("image", "image/jpeg", "image.jpg", 2048)
    assert media.locator["directPath"] == "/v/t62.7118-24/image"
    assert set(media.locator) == {
        "kind",
        "URL",
        "directPath",
        "mediaKey",
        "fileEncSHA256",
        "fileSHA256",
        "fileLength",
        "mimetype",
    }
    assert "JPEGThumbnail" not in media.locator


def test_a_document_keeps_its_name():
    media = _read(document(name="q3.pdf")).media
    assert media is not None
    assert (media.kind, media.name) == ("document", "q3.pdf")


@pytest.mark.parametrize(
    ("content", "kind", "media_type"),
    [
        (
            e2e.Message(audioMessage=e2e.AudioMessage(PTT=True, mimetype="audio/ogg; codecs=opus")),
            "voice",
            "audio/ogg; codecs=opus",
        ),
        (e2e.Message(audioMessage=e2e.AudioMessage(mimetype="audio/mpeg")), "audio", "audio/mpeg"),
        (e2e.Message(videoMessage=e2e.VideoMessage(caption="clip")), "video", "video/mp4"),
        (e2e.Message(ptvMessage=e2e.VideoMessage()), "video", "video/mp4"),
        (e2e.Message(stickerMessage=e2e.StickerMessage(mimetype="image/webp")), "sticker", "image/webp"),
    ],
)
def test_other_media(content, kind, media_type):
    media = _read(content).media
    assert media is not None
    assert (media.kind, media.media_type) == (kind, media_type)


@pytest.mark.parametrize(
    "envelope",
    [
        lambda inner: e2e.Message(ephemeralMessage=e2e.FutureProofMessage(message=inner)),
        lambda inner: e2e.Message(viewOnceMessageV2=e2e.FutureProofMessage(message=inner)),
        lambda inner: e2e.Message(documentWithCaptionMessage=e2e.FutureProofMessage(message=inner)),
        lambda inner: e2e.Message(deviceSentMessage=e2e.DeviceSentMessage(destinationJID=ALICE, message=inner)),
        lambda inner: e2e.Message(
            ephemeralMessage=e2e.FutureProofMessage(
                message=e2e.Message(viewOnceMessage=e2e.FutureProofMessage(message=inner))
            )
        ),
    ],
)
def test_envelopes_are_opened(envelope):
    message = _read(envelope(image(caption="inside")))
    assert (message.kind, message.text) == ("media", "inside")


def test_companion_fields_do_not_hide_the_content():
    content = text("hi")
    content.messageContextInfo.messageSecret = b"s" * 32
    content.senderKeyDistributionMessage.groupID = GROUP
    assert _read(content).kind == "text"


def test_an_edit_names_the_edited_message():
    message = _read(edit("ORIGINAL1", "fixed typo"))
    assert (message.kind, message.target_id, message.text) == ("edit", "ORIGINAL1", "fixed typo")


def test_a_revoke_names_the_deleted_message():
    message = _read(revoke("GONE1"))
    assert (message.kind, message.target_id) == ("revoke", "GONE1")


def test_other_protocol_traffic_is_system():
    content = e2e.Message(protocolMessage=e2e.ProtocolMessage(type=e2e.ProtocolMessage.EPHEMERAL_SETTING))
    assert _read(content).kind == "system"
    assert _read(e2e.Message()).kind == "system"


def test_a_reaction_and_one_taken_back():
    reacted = e2e.Message(reactionMessage=e2e.ReactionMessage(key=MessageKey(ID="M1"), text="👍"))
    assert (_read(reacted).kind, _read(reacted).target_id, _read(reacted).text) == ("reaction", "M1", "👍")
    taken_back = e2e.Message(reactionMessage=e2e.ReactionMessage(key=MessageKey(ID="M1"), text=""))
    assert _read(taken_back).kind == "system"


def test_a_location_a_contact_and_a_poll_are_told_in_words():
    place = e2e.Message(
        locationMessage=e2e.LocationMessage(degreesLatitude=52.52, degreesLongitude=13.405, name="TV tower")
    )
    assert _read(place).text == "[location: TV tower (52.52000, 13.40500)]"
    card = e2e.Message(contactMessage=e2e.ContactMessage(displayName="Bob", vcard="BEGIN:VCARD\nEND:VCARD"))
    assert _read(card).text == "[contact card: Bob]\nBEGIN:VCARD\nEND:VCARD"
    poll = e2e.PollCreationMessage(name="Lunch?", options=[e2e.PollCreationMessage.Option(optionName=n) for n in "AB"])
    assert _read(e2e.Message(pollCreationMessageV3=poll)).text == "[poll: Lunch?: A / B]"


def test_an_unknown_kind_is_unsupported_not_an_error():
    content = e2e.Message(groupInviteMessage=e2e.GroupInviteMessage(groupJID=GROUP, inviteCode="abc"))
    message = _read(content)
    assert (message.kind, message.type_name) == ("unsupported", "groupInviteMessage")


def test_a_message_without_an_id_or_chat_is_malformed():
    event = message_event(text("hi"), chat=ALICE, message_id="")
    with pytest.raises(EventInvalid):
        wire.read_message(event)
    with pytest.raises(EventInvalid):
        wire.read_message(neo.Message(Message=text("no info")))


def test_event_names_and_enum_names():
    assert wire.event_name(qr_event()) == "QR"
    assert wire.event_name(message_event(text("x"), chat=ALICE)) == "Message"
    assert wire.enum_name(logged_out("MAIN_DEVICE_GONE"), "Reason") == "MAIN_DEVICE_GONE"
    assert wire.enum_name(neo.LoggedOut(), "Reason") == ""
    assert wire.event_name(object()) == "object"


def test_the_identity_of_a_device():
    device = neo.Device(JID=jid("491511234567:12@s.whatsapp.net"), LID=jid("987654321012345:12@lid"), PushName="Ishiki")
    assert wire.identity(device) == wire.Identity("491511234567", "987654321012345", "Ishiki")
    assert wire.identity(neo.Device()) is None
    me = wire.identity(device)
    assert me is not None
    assert me.is_me(Jid("987654321012345", "lid"))
    assert not me.is_me(Jid("491511234567", "g.us"))
