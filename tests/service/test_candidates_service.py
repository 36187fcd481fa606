"""Candidate pruning through the service: the option, the plan, the chunks and outputs without -inf."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import prepared_manuscript, record

from collation.core import defaults
from collation.core.options import CollationOptions
from collation.jobs.planning import Plan, Planned, next_steps, scoring_progress
from collation.service.results import top_candidates
from collation.store.folder import FolderStore
from collation.store.records import collation_id, pair_key
from collation.store.stepnames import Step

API = "/api/v1"
CID = "0123456789abcdef"


def strict_json(text: str) -> Any:
    """JSON that must hold no NaN or Infinity (what browsers and strict parsers refuse)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def doc(m: int, regions: int) -> Any:
    return prepared_manuscript(m, regions, features_key=f"f{m}")


def everything(*args: Any) -> bool:
    return True


def nothing(*args: Any) -> bool:
    return False


# -- options and keys ----------------------------------------------------------------------------


def test_the_option_resolves_to_the_default_null_or_an_integer() -> None:
    assert CollationOptions.parse({}).candidates == defaults.CANDIDATES
    assert CollationOptions.parse({"candidates": None}).candidates is None
    assert CollationOptions.parse({"candidates": 3}).candidates == 3
    ids = {
        collation_id(["a", "b"], None, CollationOptions.parse(o))
        for o in ({}, {"candidates": None}, {"candidates": 3}, {"candidates": defaults.CANDIDATES})
    }
    assert len(ids) == 3  # left out and the default are one collation


def test_pair_keys_of_full_and_pruned_matrices_never_mix() -> None:
    keys = {pair_key(CollationOptions.parse({"candidates": k}), "a", "b") for k in (None, 1, 2)}
    assert len(keys) == 3
    # s_features scores every pair: its candidates do not enter the key
    s_features = {pair_key(CollationOptions(similarity="s_features", candidates=k), "a", "b") for k in (None, 3)}
    assert len(s_features) == 1


@pytest.mark.parametrize("name", ["RANSAC_ITERATIONS", "RANSAC_TOLERANCE"])
def test_every_setting_of_s_trans_keys_its_matrices(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored candidate set or score matrix is never served after a change of what produced it."""
    pruned, full = CollationOptions(candidates=10), CollationOptions(candidates=None)
    before = pair_key(pruned, "a", "b"), pair_key(full, "a", "b")
    monkeypatch.setattr(defaults, name, getattr(defaults, name) * 2)
    assert pair_key(pruned, "a", "b") != before[0] and pair_key(full, "a", "b") != before[1]


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(defaults.CascadeConfig)])
def test_every_setting_of_the_cascade_keys_the_pruned_matrices(field: str) -> None:
    """The cascade's settings are one value whose every field keys the candidate sets (not the full matrices)."""
    pruned, full = CollationOptions(candidates=10), CollationOptions(candidates=None)
    value = getattr(defaults.CASCADE, field)
    changed = dataclasses.replace(defaults.CASCADE, **{field: "avg" if isinstance(value, str) else value * 2})
    assert pair_key(pruned, "a", "b", changed) != pair_key(pruned, "a", "b")
    assert pair_key(full, "a", "b", changed) == pair_key(full, "a", "b")


def test_the_cascade_reads_its_settings_from_its_configuration_alone() -> None:
    """No module of the cascade reads a default the key does not hold: each reads the ``CascadeConfig``."""
    import ast

    fields = {"CANDIDATES_" + f.upper() for f in ("wide", "corridor", "coarse_factor", "cheap_iterations")}
    fields |= {"CANDIDATES_GRID", "CANDIDATES_GEM_POWER", "NORMALIZATION", "PROPAGATION_SIGMA", "PROPAGATION_ALPHA"}
    source = (Path(__file__).resolve().parents[2] / "collation" / "engine" / "cascade.py").read_text()
    read = {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and n.attr in fields}
    assert read == set()


def test_partial_keys_the_floor_of_its_divisor(monkeypatch: pytest.MonkeyPatch) -> None:
    partial = CollationOptions(partial=True)
    before = pair_key(partial, "a", "b")
    monkeypatch.setattr(defaults, "PARTIAL_MIN_AREA", defaults.PARTIAL_MIN_AREA / 2)
    assert pair_key(partial, "a", "b") != before
    assert pair_key(CollationOptions(), "a", "b") == pair_key(CollationOptions(), "a", "b")


@pytest.mark.parametrize("name", ["FEATURES_BUCKET", "L2_EPS"])
def test_every_setting_that_changes_features_keys_them(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from collation.engine.feature_keys import features_key

    before = features_key(["d0", "d1"], CollationOptions(), precision="float32")
    assert features_key(["d0", "d1"], CollationOptions(similarity="s_features"), precision="float32") != before
    assert features_key(["d0", "d1"], CollationOptions(backbone="resnet50-conv4"), precision="float32") != before
    monkeypatch.setattr(defaults, name, getattr(defaults, name) * 2)
    assert features_key(["d0", "d1"], CollationOptions(), precision="float32") != before


# -- planning ------------------------------------------------------------------------------------


def test_missing_candidates_plan_the_plan_step_then_chunks_over_them() -> None:
    rec, docs = record(chunk_pairs=2, options={"candidates": 2}), [doc(0, 4), doc(1, 5)]
    assert next_steps(rec, docs, {}, everything, nothing, nothing, lambda key: None) == Plan(
        "scoring", (Planned(Step.plan()),)
    )
    plan = next_steps(rec, docs, {}, everything, nothing, nothing, lambda key: 5)
    chunks = tuple(Planned(Step.chunk(0, 1, k)) for k in range(3))  # 5 candidate pairs, 2 per chunk
    assert plan == Plan("scoring", (*chunks, Planned(Step.finalize(), tuple(c.step for c in chunks))))
    assert scoring_progress(rec, docs, {}, nothing, lambda key, c, k: k == 0, lambda key: 5) == (2, 5)


def test_without_pruning_every_pair_is_chunked() -> None:
    plan = next_steps(
        record(chunk_pairs=2, options={"candidates": None}),
        [doc(0, 4), doc(1, 5)],
        {},
        everything,
        nothing,
        nothing,
        lambda key: None,
    )
    assert len(plan.steps) == 10 + 1  # 20 pairs, 2 per chunk, and finalize


def test_top_candidates_never_list_unscored_pairs() -> None:
    m = np.array([[0.5, -np.inf, 0.9], [-np.inf, -np.inf, 0.1]])
    assert top_candidates(m, 3) == [[2, 0], [2]]
    assert top_candidates(m, 1) == [[2], [2]]


def test_the_store_keeps_candidate_pairs_until_the_matrix_is_there(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    assert store.pair_count("k") is None and store.load_pairs("k") is None
    store.save_pairs("k", np.array([[0, 1], [2, 0]]))
    assert store.pair_count("k") == 2 and store.load_pairs("k").tolist() == [[0, 1], [2, 0]]
    store.drop_chunks("k", 6)
    assert store.pair_count("k") is None


# -- through the API -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_bad_candidates_are_400(api: Any, synthetic: Any, value: Any) -> None:
    r = api.post(f"{API}/collations", json={"manifests": [synthetic.a, synthetic.c], "options": {"candidates": value}})
    assert r.status_code == 400 and r.get_json()["field"] == "options.candidates"


def test_a_pruned_collation_gives_valid_json_everywhere(api: Any, synthetic: Any, run_jobs: Any, settings: Any) -> None:
    r = api.post(
        f"{API}/collations",
        json={
            "manifests": [synthetic.a, synthetic.b],
            "regions": {"1": synthetic.b_regions},
            "options": {"candidates": 1},
        },
    )
    cid = r.get_json()["id"]
    run_jobs()
    status = api.get(f"{API}/collations/{cid}").get_json()
    assert status["status"] == "finished", status
    assert status["options"]["candidates"] == 1

    store = FolderStore(settings.data_dir)
    results = store.load_results(cid, 0, 1)
    unscored = ~np.isfinite(results.S)
    assert unscored.any() and np.isfinite(results.S).sum() <= 2 * synthetic.n  # at most (n0 + n1) k pairs
    assert not list(Path(settings.data_dir, "scores").glob("*.pairs.npy"))  # dropped once the matrix is stored

    for score in ("raw", "normalized", "propagated"):
        corr = strict_json(
            api.get(f"{API}/collations/{cid}/correspondences?pair=0,1&score={score}&top=4").get_data(as_text=True)
        )
        for r_, item in enumerate(corr["items"]):
            assert 1 <= len(item["candidates"]) < 4 or not unscored[r_].any()
            assert all(np.isfinite(results.S[r_, c["index"]]) for c in item["candidates"])
        assert {item["source"]["index"]: item["candidates"][0]["index"] for item in corr["items"]} == {
            k: k for k in range(synthetic.n)
        }
    for path in ("annotations", "concordance", "manifests/0", "pages/0/1", "view.json?pair=0,1"):
        r = api.get(f"{API}/collations/{cid}/{path}")
        assert r.status_code == 200, path
        strict_json(r.get_data(as_text=True))
    assert api.get(f"{API}/collations/{cid}/matrix.png?pair=0,1").status_code == 200
