"""Clearing a verdict (``DELETE /collations/{id}/assessments``) and the reviewer's name kept with it:
the pair page's review flow (viewer.js, reviewer.js) relies on both."""

from __future__ import annotations

from typing import Any

API = "/api/v1"


def test_a_cleared_verdict_leaves_the_correspondence_unjudged_and_p_s_as_before(
    api: Any, synthetic: Any, run_jobs: Any
) -> None:
    r = api.post(
        f"{API}/collations", json={"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}
    )
    cid = r.get_json()["id"]
    run_jobs()

    def candidate(i: int, j: int) -> dict[str, Any]:
        doc = api.get(f"{API}/collations/{cid}/correspondences?pair=0,1&top={synthetic.n}").get_json()
        return next(c for c in doc["items"][i]["candidates"] if c["index"] == j)

    before = candidate(0, 3)
    body = {"pair": [1, 0], "source": 3, "target": 0, "verdict": "confirmed", "creator": "Marie", "note": "same hand"}
    stored = api.post(f"{API}/collations/{cid}/assessments", json=body).get_json()
    # the reviewer's name is the published annotation's creator, the note its commenting body
    assert stored["creator"] == "Marie"
    assert stored["annotation"]["creator"] == {"type": "Person", "name": "Marie"}
    assert {"type": "TextualBody", "purpose": "commenting", "value": "same hand"} in stored["annotation"]["body"]
    assert candidate(0, 3)["P_S"] > before["P_S"]

    # cleared from the other direction than it was stored in: the same correspondence
    r = api.delete(f"{API}/collations/{cid}/assessments?pair=0,1&source=0&target=3")
    assert r.status_code == 200 and r.get_json() == {"id": cid, "cleared": 1}
    after = candidate(0, 3)
    assert after.get("assessment") is None and after["P_S"] == before["P_S"]
    assert api.get(f"{API}/collations/{cid}/assessments").get_json()["items"] == []


def test_clearing_needs_a_pair_and_names_the_missing_field(api: Any, synthetic: Any, run_jobs: Any) -> None:
    cid = api.post(
        f"{API}/collations", json={"manifests": [synthetic.a, synthetic.b], "regions": {"1": synthetic.b_regions}}
    ).get_json()["id"]
    run_jobs()
    r = api.delete(f"{API}/collations/{cid}/assessments?source=0&target=3")
    assert r.status_code == 400 and "pair" in r.get_data(as_text=True)
