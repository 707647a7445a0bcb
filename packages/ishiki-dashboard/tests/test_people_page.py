"""The memory page's people: listed, shown, rewritten (level kept) and deleted by the operator, audited."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


async def test_people_are_listed_shown_edited_and_deleted(dash) -> None:
    store = dash.ctx.services.memory
    await store.people.keep("ana", "fake:7", "sender", "Name: Bo\nLikes: tea", name="Bo", trust="trusted")
    listed = (await dash.client.get("/api/people")).json()["people"]
    assert [(p["subject"], p["name"], p["min_trust"]) for p in listed] == [("fake:7", "Bo", "trusted")]
    page = (await dash.client.get("/memories")).text
    assert "People" in page
    assert "Likes: tea" in page
    shown = await dash.client.get("/memories/person", params={"profile": "ana", "subject": "fake:7"})
    assert shown.status_code == 200
    assert "Shown to turns at the trusted level and above where Bo speaks." in shown.text
    edited = await dash.post(
        "/memories/person/edit", data={"profile": "ana", "subject": "fake:7", "content": "Name: Bo. Matcha only."}
    )
    assert edited.status_code == 303
    person = await store.people.get("ana", "fake:7")
    assert (person.content, person.min_trust, person.edited_by) == ("Name: Bo. Matcha only.", "trusted", "owner")
    empty = await dash.post("/memories/person/edit", data={"profile": "ana", "subject": "fake:7", "content": " "})
    assert empty.status_code == 400
    unknown = await dash.post("/memories/person/edit", data={"profile": "ana", "subject": "fake:8", "content": "x"})
    assert unknown.status_code == 404
    deleted = await dash.post("/memories/person/delete", data={"profile": "ana", "subject": "fake:7"})
    assert deleted.status_code == 200
    assert await store.people.get("ana", "fake:7") is None
    gone = await dash.client.get("/memories/person", params={"profile": "ana", "subject": "fake:7"})
    assert gone.status_code == 404
    assert (await dash.client.get("/memories/person", params={"profile": "nope", "subject": "x"})).status_code == 400
