"""Transposed and partial copies through the service: the options, their keys and plan, and a
manuscript collated against its mirrored copy by an in-process RQ worker on the real Redis, its
numbers checked against the engine's on the stored features. Responses are checked against
``openapi.yaml``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_grid import full_scores

from collation.core.options import CollationOptions
from collation.core.settings import Settings
from collation.core.vocabulary import TRANSPOSITION_SETS
from collation.engine.pipeline import assemble, find_candidates, score_candidates, suspects
from collation.engine.similarity import score_pairs
from collation.jobs.planning import Planned, next_steps
from collation.service import schemas
from collation.service.results import pair_results
from collation.store.folder import FolderStore
from collation.store.records import (
    CollationRequest,
    collation_id,
    feature_keys,
    new_record,
    pair_key,
    second_features_key,
    transposed_features_key,
    turned_features_key,
)
from collation.store.stepnames import Step
from collation.store.stored import PairResults, PreparedManuscript, StoredRegion

API = "/api/v1"
CID = "0123456789abcdef"
PLAIN_RESULTS = {"S", "N_S", "P_S", "two_cycles", "three_cycles", "auto_seeds", "seeds"}
"""The arrays of a plain collation's results, as stored before transpositions existed."""


# -- options, keys and plan ----------------------------------------------------------------------


def test_the_option_values_are_the_engine_s() -> None:
    assert schemas.OptionsSchema().fields["transpositions"].validate.choices == tuple(TRANSPOSITION_SETS)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"transpositions": "both"}, "options.transpositions"),
        ({"transpositions": "identity"}, "options.transpositions"),
        ({"transpositions": None}, "options.transpositions"),
        ({"transpositions": True}, "options.transpositions"),
        ({"partial": "yes"}, "options.partial"),
        ({"partial": 1}, "options.partial"),
        ({"partial": None}, "options.partial"),
        ({"partial": True, "similarity": "s_matching"}, "options.partial"),
        ({"transpositions": "mirror", "similarity": "s_features"}, "options.transpositions"),
    ],
)
def test_bad_transposition_and_partial_options_are_400(
    api: Any, synthetic: Any, options: dict[str, Any], field: str
) -> None:
    r = api.post(f"{API}/collations", json={"manifests": [synthetic.a, synthetic.c], "options": options})
    assert r.status_code == 400, r.get_json()
    assert r.get_json()["field"] == field


def test_options_are_recorded_only_when_they_change_the_scores() -> None:
    plain = CollationOptions.parse({"transpositions": "none"})
    assert "transpositions" not in plain.to_record() and "partial" not in plain.to_record()
    assert CollationOptions.parse({}).to_record() == {**plain.to_record(), "transpositions": "turns"}  # the default
    for same in ({"transpositions": "none", "partial": False},):
        assert CollationOptions.parse(same) == plain  # the same record, the same collation id
    assert CollationOptions.parse({"partial": False}) == CollationOptions.parse({})
    mirror = CollationOptions.parse({"transpositions": "mirror", "partial": True})
    assert mirror.to_record() == {**plain.to_record(), "transpositions": "mirror", "partial": True}
    ids = {
        collation_id(["a", "b"], None, CollationOptions.parse(o))
        for o in ({}, {"transpositions": "mirror"}, {"transpositions": "all"}, {"partial": True})
    }
    assert len(ids) == 4
    # Plain pair keys are those they were; each option gives its own cached matrix.
    keys = {
        pair_key(CollationOptions.parse(o), "f0", "f1")
        for o in ({"transpositions": "none"}, {"transpositions": "mirror"})
    }
    keys |= {pair_key(CollationOptions.parse({"partial": True}), "f0", "f1")}
    assert len(keys) == 3


def test_the_second_manuscripts_also_get_transposed_features() -> None:
    plain, mirror = CollationOptions(), CollationOptions(transpositions="mirror")
    assert feature_keys(plain, 1, "k") == ["k"] and second_features_key(plain, "k") == "k"
    assert feature_keys(mirror, 0, "k") == ["k"]  # manuscript 0 is never the second of a pair
    assert feature_keys(mirror, 1, "k") == ["k", "k.mirror"] == ["k", transposed_features_key("k", "mirror")]
    assert second_features_key(mirror, "k") == "k.mirror"

    settings = Settings.from_env({}, chunk_pairs=4)
    record = new_record(CID, CollationRequest(("https://x/0.json", "https://x/1.json")), mirror, settings)
    regions = tuple(StoredRegion(i, f"c{i}", i, (0, 0, 10, 10), f"d{i}") for i in range(2))
    docs = [PreparedManuscript(m, f"https://x/{m}.json", regions=regions, features_key=f"f{m}") for m in (0, 1)]
    plan = next_steps(record, docs, {}, lambda key: "." not in key, lambda key: False, lambda *a: False)
    assert plan.stage == "preparing" and [p.step for p in plan.steps] == [Step.features(1), Step.plan()]
    plan = next_steps(record, docs, {}, lambda key: True, lambda key: False, lambda *a: False, lambda key: 3)
    assert Planned(Step.chunk(0, 1, 0)) in plan.steps


def test_a_pair_read_the_other_way_reports_the_inverse_transposition(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    settings = Settings()
    request = CollationRequest(("https://x/0.json", "https://x/1.json"))
    record = new_record(CID, request, CollationOptions(transpositions="all"), settings)
    record.usable = [0, 1]
    assert store.create_collation(record)
    for m in (0, 1):
        regions = [StoredRegion(i, f"c{i}", i, (0, 0, 10, 10), digest=f"d{i}") for i in range(2)]
        doc = PreparedManuscript(m, f"https://x/{m}.json", regions=tuple(regions), features_key=f"f{m}")
        store.save_manuscript(CID, doc)
    s = np.array([[1.0, 0.2], [0.1, 1.5]])
    t = np.array([[1, 0], [0, 2]], dtype=np.int8)  # (0, 0) mirrored, (1, 1) turned 90° counter-clockwise
    store.save_results(CID, PairResults(0, 1, s, s, s, T=t))
    forward, back = pair_results(store, record, 0, 1), pair_results(store, record, 1, 0)
    assert forward.transposition_names == back.transposition_names == list(TRANSPOSITION_SETS["all"])
    assert forward.transpositions.tolist() == [["mirror", "identity"], ["identity", "rot90"]]
    # read from manuscript 1: region 1 of manuscript 0, turned 270°, matches region 1 of manuscript 1
    assert back.transpositions.tolist() == [["mirror", "identity"], ["identity", "rot270"]]
    # the store keeps one copy, with the lower manuscript first, whichever way it is written
    store.save_results(CID, store.load_results(CID, 1, 0))
    assert store.load_results(CID, 0, 1).T.tolist() == t.tolist()


# -- a manuscript against its mirrored copy, through Redis and a worker ---------------------------


def run(api: Any, run_jobs: Any, manifests: list[str], options: dict[str, Any]) -> str:
    r = api.post(f"{API}/collations", json={"manifests": manifests, "options": options})
    assert r.status_code == 202, r.get_json()
    cid = r.get_json()["id"]
    run_jobs()
    doc = api.get(f"{API}/collations/{cid}").get_json()
    assert doc["status"] == "finished", doc
    return cid


def annotations_text(api: Any, cid: str) -> str:
    pages = [api.get(f"{API}/collations/{cid}/annotations?page=1").get_json()]
    pages += [api.get(f"{API}/collations/{cid}/pages/{m}/1").get_json() for m in (0, 1)]
    return json.dumps(pages)


@pytest.mark.parametrize(
    "options",
    [{"transpositions": "mirror"}, {"transpositions": "mirror", "partial": True, "candidates": 1}],
    ids=["mirror", "mirror-partial-pruned"],
)
def test_a_mirrored_copy_is_found_and_reported_mirrored(
    api: Any, synthetic: Any, mirrored: str, run_jobs: Any, settings: Settings, options: dict[str, Any]
) -> None:
    n = synthetic.n
    cid = run(api, run_jobs, [synthetic.a, mirrored], options)
    status = api.get(f"{API}/collations/{cid}").get_json()
    assert status["options"]["transpositions"] == "mirror"
    assert status["options"].get("partial", False) is options.get("partial", False)

    # The numbers are the engine's on the stored features: transposed features under the plain key plus
    # the option, chunks of 6 pairs (scores and winners) joined, partial and pruning passed through.
    store = FolderStore(settings.data_dir)
    docs = [store.load_manuscript(cid, m) for m in (0, 1)]
    feats0 = store.load_features(docs[0].features_key)
    turned1 = store.load_features(transposed_features_key(docs[1].features_key, "mirror"))
    assert len(turned1) == 2 * n and not store.has_features(transposed_features_key(docs[0].features_key, "mirror"))
    engine_options = CollationOptions.parse(options | {"transpositions": "mirror"})
    pairs = find_candidates(feats0, turned1, engine_options).pairs
    s, t = assemble((n, n), pairs, *score_candidates(feats0, turned1, pairs, engine_options))
    results = store.load_results(cid, 0, 1)
    assert set(results.arrays()) == PLAIN_RESULTS | {"T"} and results.T.dtype == np.int8
    assert np.array_equal(results.S, s) and np.array_equal(results.T, t)
    assert (np.diag(results.T) == 1).all()  # every copy won mirrored
    if "candidates" in options:
        assert len(pairs) < n * n and np.isinf(results.S).any()  # pruned: some pairs unscored
    # Mirroring back is what finds them: as drawn, each copy scores far lower against its original.
    as_drawn = full_scores(feats0, turned1.select(range(n)), partial=options.get("partial", False))
    # Here 1.05-1.23 against 0.86-0.98 with partial: a fifth more (bare ground matches nothing, so S counts the
    # shapes' cells only: features.uniform_cells; before that, 1.91-1.95 against 1.54-1.61).
    assert (np.diag(results.S) > 1.12 * np.diag(as_drawn)).all()

    for pair in ("0,1", "1,0"):
        corr = api.get(f"{API}/collations/{cid}/correspondences?pair={pair}&score=raw&top=2").get_json()
        assert corr["transposition_names"] == ["identity", "mirror"]
        best = {item["source"]["index"]: item["candidates"][0] for item in corr["items"]}
        assert {i: c["index"] for i, c in best.items()} == {k: k for k in range(n)}, pair
        assert [c["transposition"] for c in best.values()] == ["mirror"] * n  # a mirror is its own inverse
        assert all("transposition" in c for item in corr["items"] for c in item["candidates"])

    # The annotations: the link of each match carries region B and a "mirrored copy" body; so do the
    # display annotations on both canvases, in their HTML too.
    links = api.get(f"{API}/collations/{cid}/annotations?page=1").get_json()["items"]
    for k in range(n):
        link = next(item for item in links if item["id"].endswith(f"/links/0-1-{k}-{k}"))
        assert link["body"][0]["type"] == "SpecificResource"
        assert link["body"][1] == {"type": "TextualBody", "purpose": "tagging", "value": "mirrored copy"}
    for m in (0, 1):
        page = api.get(f"{API}/collations/{cid}/pages/{m}/1").get_json()
        first = page["items"][0]
        assert first["body"][1]["value"] == "mirrored copy" and "mirrored copy" in first["body"][0]["value"]
    collection = api.get(f"{API}/collations/{cid}/annotations").get_json()
    assert collection["total"] >= n


def test_without_transpositions_nothing_new_is_recorded_or_served(
    api: Any, synthetic: Any, mirrored: str, run_jobs: Any, settings: Settings
) -> None:
    cid = run(api, run_jobs, [synthetic.a, mirrored], {"transpositions": "none", "partial": False})
    # the same collation as a request without partial; the default (turns) is another collation
    assert cid == run(api, run_jobs, [synthetic.a, mirrored], {"transpositions": "none"})
    assert cid != collation_id([synthetic.a, mirrored], None, CollationOptions.parse({}))
    store = FolderStore(settings.data_dir)
    record = store.load_record(cid)
    assert set(record.options.to_record()) == {
        "backbone",
        "similarity",
        "normalization",
        "propagation",
        "seed",
        "kernel",
        "candidates",
    }
    assert set(store.load_results(cid, 0, 1).arrays()) == PLAIN_RESULTS
    assert not list(Path(settings.data_dir, "features").glob("*.*.pt"))  # no transposed features
    assert not list(Path(settings.data_dir, "scores").glob("*.T.npy"))
    for pair in ("0,1", "1,0"):
        corr = api.get(f"{API}/collations/{cid}/correspondences?pair={pair}&top=4").get_json()
        assert "transposition_names" not in corr
        assert not any("transposition" in c for item in corr["items"] for c in item["candidates"])
    text = annotations_text(api, cid)
    assert "mirrored copy" not in text and "turned copy" not in text


def test_turns_are_chosen_by_the_plan_step_and_scored_as_the_engine_scores_them(
    api: Any, synthetic: Any, mirrored: str, run_jobs: Any, settings: Settings
) -> None:
    n = synthetic.n
    cid = run(api, run_jobs, [synthetic.a, mirrored], {"transpositions": "turns"})
    store = FolderStore(settings.data_dir)
    docs = [store.load_manuscript(cid, m) for m in (0, 1)]
    options = CollationOptions.parse({"transpositions": "turns"})
    # Nothing transposed is described per manuscript; the plan step described the copies it suspected, each
    # under its likeliest transposition, under the pair's key.
    assert feature_keys(options, 1, docs[1].features_key) == [docs[1].features_key]
    feats0, plain1 = (store.load_features(d.features_key) for d in docs)
    turned1 = store.load_features(turned_features_key(pair_key(options, docs[0].features_key, docs[1].features_key)))
    assert len(turned1) == n and turned1.scales == plain1.scales
    suspected = suspects(find_candidates(feats0, plain1, options))
    assert np.array_equal(turned1.mask.any(dim=(1, 2)).numpy(), suspected.columns)
    results = store.load_results(cid, 0, 1)
    assert results.T is not None and (results.S.argmax(axis=1) == np.arange(n)).all()
    # These shapes are near symmetric: their mirrored copies match as drawn (S 1.5-1.6, cheap score 1.6), so
    # none is suspected and every pair is scored as drawn (the stored turned set holds empty maps only).
    diagonal = np.stack([np.arange(n)] * 2, axis=1)
    as_drawn = score_pairs(feats0, plain1, diagonal)[0].numpy()
    described = turned1.mask.any(dim=(1, 2)).numpy()
    assert np.array_equal(results.S.diagonal()[~described], as_drawn[~described])
    assert not results.T[:, ~described].any()
