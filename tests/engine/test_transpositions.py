"""Transposed copies (mirror, turns) and the partial-copy S_trans, on drawings the tests make."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from engine_grid import device_dtype_grid, full_scores, full_scores_transposed
from PIL import Image
from synthetic import drawing, restyled_copy

from collation.cli.main import main
from collation.core.errors import InputError, OptionError
from collation.core.options import CollationOptions
from collation.core.vocabulary import INVERSES, TRANSPOSITION_NAMES, TRANSPOSITION_SETS
from collation.engine.candidates import global_scores, recall
from collation.engine.features import extract_features
from collation.engine.partial import matched_cells, partial_normalizer
from collation.engine.pipeline import (
    Manuscript,
    assemble,
    choose_transpositions,
    describe_transposed,
    find_candidates,
    run_collation,
    score_candidates,
    suspects,
)
from collation.engine.similarity import score_pairs
from collation.engine.transpositions import (
    extract_transposed_features,
    transpose_image,
    transposed_global_scores,
    transposition_names,
    winner_names,
)

TRANSPOSITIONS = TRANSPOSITION_SETS["all"]  # the exact ones: mirrors and quarter turns
N = 4
MIRRORED, TURNED = 1, 2  # copies 1 and 2 are mirrored and turned 90° counter-clockwise


def _copies() -> list[Image.Image]:
    copies = [restyled_copy(drawing(k)) for k in range(N)]
    copies[MIRRORED] = copies[MIRRORED].transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    copies[TURNED] = copies[TURNED].transpose(Image.Transpose.ROTATE_90)
    return copies


@pytest.fixture(scope="module")
def originals(backbone):
    return extract_features([drawing(k) for k in range(N)], backbone)


@pytest.fixture(scope="module")
def transposed(backbone):
    return extract_transposed_features(_copies(), backbone, "all")


def test_option_values_and_names():
    assert transposition_names("none") == ("identity",)
    assert transposition_names("mirror") == ("identity", "mirror")
    assert transposition_names("all") == TRANSPOSITIONS and TRANSPOSITIONS[0] == "identity"
    for bad in ("mirrored", None, 1, ""):
        with pytest.raises(OptionError) as e:
            transposition_names(bad)
        assert e.value.field == "transpositions" and set(e.value.allowed) == set(TRANSPOSITION_SETS)
    with pytest.raises(OptionError):
        transpose_image(drawing(0), "rot40")


def test_transposed_images_are_exact_and_invertible():
    image = drawing(0, (64, 48))
    assert transpose_image(image, "identity") is image
    assert transpose_image(image, "rot90").size == (48, 64)
    for name, inverse in (("mirror", "mirror"), ("rot90", "rot270"), ("rot180", "rot180"), ("flip", "flip")):
        back = transpose_image(transpose_image(image, name), inverse)
        assert np.array_equal(np.asarray(back), np.asarray(image))


def test_inverses_undo_every_transposition():
    image = drawing(1, (64, 48))
    assert set(INVERSES) == set(TRANSPOSITION_NAMES)
    for name in TRANSPOSITIONS:
        back = transpose_image(transpose_image(image, name), INVERSES[name])
        assert np.array_equal(np.asarray(back), np.asarray(image)), name


@pytest.mark.heavy
def test_transposed_features_are_transposition_major(originals, transposed, backbone):
    assert len(transposed) == len(TRANSPOSITIONS) * N
    plain = extract_features(_copies(), backbone)
    assert torch.equal(transposed.select(range(N)).desc[..., : plain.desc.shape[2], :], plain.desc)
    # With "none", the plain features are returned as they are.
    assert extract_transposed_features(_copies(), backbone, "none", plain=plain) is plain
    with pytest.raises(InputError):
        extract_transposed_features(_copies(), backbone, "mirror", plain=originals.select([0]))


@pytest.mark.heavy
def test_none_gives_exactly_the_old_scores(originals, transposed):
    plain = transposed.select(range(N))
    old = full_scores(originals, plain, seed=3)
    s, t = full_scores_transposed(originals, plain, 1, seed=3)
    assert np.array_equal(s, old) and t.dtype == np.int8 and not t.any()
    # Index t * n + j keeps the draws of j as drawn for t = 0: the identity block of "all" is the old S.
    every = full_scores(originals, transposed, seed=3).reshape(N, len(TRANSPOSITIONS), N)
    assert np.array_equal(every[:, 0], old)


@device_dtype_grid
@pytest.mark.heavy
def test_the_transposition_wins_and_is_reported(originals, transposed, device, dtype):
    f0 = type(originals)(
        originals.desc.to(device, dtype),
        originals.pos.to(device),
        originals.mask.to(device),
        originals.scales,
        originals.query_scale,
        originals.backbone,
    )
    f1 = type(transposed)(
        transposed.desc.to(device, dtype),
        transposed.pos.to(device),
        transposed.mask.to(device),
        transposed.scales,
        transposed.query_scale,
        transposed.backbone,
    )
    s_none, _ = full_scores_transposed(f0, f1.select(range(N)), 1)
    s_mirror, t_mirror = full_scores_transposed(f0, f1.select(range(2 * N)), 2)
    s_all, t_all = full_scores_transposed(f0, f1, len(TRANSPOSITIONS))
    names = winner_names(t_all, "all")
    assert names[MIRRORED, MIRRORED] == "mirror" and t_mirror[MIRRORED, MIRRORED] == 1
    assert names[TURNED, TURNED] == "rot270"  # turning the copy back aligns it with the original
    # Uniform cells (bare paper) match nothing, so S counts the drawn cells' matches only: a copy scores
    # about 0.9 here, not 1.5 (features.uniform_cells).
    assert s_mirror[MIRRORED, MIRRORED] > s_none[MIRRORED, MIRRORED] + 0.1
    assert s_none[TURNED, TURNED] < 0.6 < 0.8 < s_all[TURNED, TURNED]
    assert (s_all.argmax(axis=1) == np.arange(N)).all() and (s_all.argmax(axis=0) == np.arange(N)).all()
    assert (s_all >= s_mirror - 1e-12).all() and (s_mirror >= s_none - 1e-12).all()
    # Plain copies keep their winner: as drawn (0) wins unless a transposition scores strictly more.
    assert t_all[0, 0] == 0 and t_all[3, 3] == 0


@pytest.mark.heavy
def test_pairs_and_matrix_agree_and_check_their_inputs(originals, transposed):
    pairs = [[1, 1], [2, 2], [0, 3]]
    s, t = score_pairs(originals, transposed, pairs, n_transpositions=len(TRANSPOSITIONS), seed=0)
    full, winners = full_scores_transposed(originals, transposed, len(TRANSPOSITIONS), seed=0)
    assert s.tolist() == [full[1, 1], full[2, 2], full[0, 3]]
    assert t.tolist() == [winners[1, 1], winners[2, 2], winners[0, 3]]
    with pytest.raises(InputError):
        score_pairs(originals, transposed, pairs, n_transpositions=5)  # 24 illustrations are not 5 sets
    with pytest.raises(InputError):
        score_pairs(originals, transposed, [[0, N]], n_transpositions=len(TRANSPOSITIONS))  # j beyond n1


def test_global_scores_take_the_best_transposition(originals, transposed):
    t = len(TRANSPOSITIONS)
    every = global_scores(originals, transposed).reshape(N, t, N)
    best = transposed_global_scores(originals, transposed, t)
    assert best.shape == (N, N) and np.array_equal(best, every.max(axis=1))
    # With one transposition they are the plain global scores.
    plain = transposed.select(range(N))
    assert np.array_equal(transposed_global_scores(originals, plain, 1), global_scores(originals, plain))
    with pytest.raises(InputError):
        transposed_global_scores(originals, transposed, 5)


@pytest.mark.parametrize("k", [2, 3, None])
@pytest.mark.heavy
def test_all_scores_the_suspected_copies_under_their_likeliest_transposition(originals, transposed, backbone, k):
    _, full_t = full_scores_transposed(originals, transposed, len(TRANSPOSITIONS), seed=2)
    options = CollationOptions(seed=2, candidates=k, transpositions="all")
    plain = transposed.select(range(N))
    found = find_candidates(originals, plain, options)  # the cascade as drawn
    pairs = found.pairs
    suspected = suspects(found)
    # The turned copy has no good partner as drawn. The mirrored one has: its drawing is near symmetric (cheap
    # score 0.76 as drawn, against 1.03 for the copies as drawn, over 0.6 of them), so it is matched as drawn.
    assert suspected.columns.tolist() == [False, False, True, False]
    chosen, turns = choose_transpositions(originals, _copies(), backbone, pairs, suspected, options)
    assert winner_names(turns, "all").tolist() == ["identity", "identity", "rot270", "identity"]
    turned = describe_transposed(_copies(), backbone, options, plain, turns=turns)
    s, winners = assemble((N, N), chosen, *score_candidates(originals, plain, chosen, options, turned=turned))
    if k is None:
        assert len(chosen) == N * N
    assert recall(chosen[:, :2], np.stack([np.arange(N)] * 2, axis=1)) == 1.0
    # Each copy is matched, the transposed ones under the transposition that undoes them, as scoring all
    # six for every pair finds; the copies as drawn score what they score without transpositions.
    assert (s.argmax(axis=1) == np.arange(N)).all() and (s.argmax(axis=0) == np.arange(N)).all()
    assert winners[TURNED, TURNED] == full_t[TURNED, TURNED] and not np.delete(np.diag(winners), TURNED).any()
    plain_s = full_scores(originals, plain, seed=2)
    assert all(s[k, k] == plain_s[k, k] for k in (0, MIRRORED, 3))
    assert s[TURNED, TURNED] > 0.8 > 0.6 > plain_s[TURNED, TURNED]  # drawn cells only (features.uniform_cells)


def _half_scene_case(backbone):
    """A restyled copy of the right half of a scene, and a full-size distractor sharing 60% of it."""
    scene, other = drawing(3, (384, 256)), drawing(11, (384, 256))
    distractor = other.copy()
    distractor.paste(scene.crop((0, 0, 230, 256)), (0, 0))
    half = scene.crop((192, 0, 384, 256))
    return (
        extract_features([scene, drawing(5, (384, 256))], backbone),
        extract_features([restyled_copy(half), restyled_copy(distractor)], backbone),
    )


@pytest.mark.heavy
def test_a_half_scene_copy_wins_as_drawn_and_with_partial(backbone):
    scenes, copies = _half_scene_case(backbone)
    plain = full_scores(scenes, copies)
    partial = full_scores(scenes, copies, partial=True)
    # S_trans: the half copy wins. Before uniform cells matched nothing (features.uniform_cells), the full-size
    # distractor won, by the bare paper it shares with the scene at the same places.
    assert plain[0, 0] > plain[0, 1] + 0.05
    assert partial[0, 0] > partial[0, 1] + 0.1  # partial: the half-scene copy wins
    assert ((partial >= 0) & (partial <= 2)).all()
    # The half copy covers about half the scene: its partial score is the plain one with the scene's
    # direction counted on the matched half.
    assert partial[0, 0] > plain[0, 0] + 0.2


def test_matched_cells_and_normalizer():
    pos = torch.tensor([[[0.25, 0.5], [0.75, 0.5], [0.0, 0.0]]])  # two real cells, one padded
    half = torch.tensor([[[0.5, 0.0], [0.0, 1.0], [0.5, 0.0]]])  # the target frame onto the right half
    assert matched_cells(half, pos, torch.tensor([2])).tolist() == [1.0]
    flat = torch.zeros((1, 3, 2))  # degenerate: covers nothing
    assert matched_cells(flat, pos, torch.tensor([2])).tolist() == [0.0]
    assert partial_normalizer(flat, pos, torch.tensor([2]), min_area=0.5).tolist() == [1.0]
    assert partial_normalizer(half, pos, torch.tensor([2]), min_area=0.25).tolist() == [1.0]
    for bad in (0.0, 1.5, "half"):
        with pytest.raises(InputError):
            partial_normalizer(half, pos, torch.tensor([2]), min_area=bad)


@pytest.mark.heavy
def test_partial_is_checked(originals):
    for bad in ("yes", 1, None):
        with pytest.raises(InputError) as e:
            score_pairs(originals, originals, [[0, 0]], partial=bad)
        assert e.value.field == "partial"
    with pytest.raises(InputError):
        score_pairs(originals, originals, [[0, 0]], similarity="s_matching", partial=True)
    assert torch.equal(
        score_pairs(originals, originals, [[0, 1]], partial=False)[0], score_pairs(originals, originals, [[0, 1]])[0]
    )


def test_collation_options_are_validated_and_recorded():
    plain = CollationOptions(transpositions="none")
    assert "transpositions" not in plain.to_record() and "partial" not in plain.to_record()
    assert CollationOptions().to_record()["transpositions"] == "turns"  # the default since issue 38
    options = CollationOptions(transpositions="mirror", partial=True)
    assert options.to_record()["transpositions"] == "mirror" and options.to_record()["partial"] is True
    assert options.transposition_names == ("identity", "mirror") and options.n_transpositions == 2
    # Candidate pruning stays on with transpositions (docs/transpositions.md), and off when asked.
    assert CollationOptions(transpositions="all", candidates=3).pruned
    assert not CollationOptions(transpositions="mirror", candidates=None).pruned
    with pytest.raises(OptionError):
        CollationOptions(transpositions="both")
    with pytest.raises(InputError):
        CollationOptions(similarity="s_features", transpositions="mirror")
    with pytest.raises(InputError):
        CollationOptions(partial="no")
    with pytest.raises(InputError):
        CollationOptions.parse({"transpositions": "sideways"})
    with pytest.raises(InputError):
        run_collation([Manuscript("A", []), Manuscript("B", [])], CollationOptions(propagation="3-cycles"))


@pytest.mark.heavy
def test_collate_match_writes_the_winner(tmp_path, capsys):
    for name, images in (("A", [drawing(k) for k in range(3)]), ("B", _copies()[:3])):
        (tmp_path / name).mkdir()
        for k, image in enumerate(images):
            image.save(tmp_path / name / f"f{k}.png")
    out = tmp_path / "out"
    assert (
        main(
            [
                "match",
                f"A={tmp_path / 'A'}",
                f"B={tmp_path / 'B'}",
                "--out",
                str(out),
                "--device",
                "cpu",
                "--transpositions",
                "all",
                "--partial",
            ]
        )
        == 0
    )
    meta = json.loads((out / "collation.json").read_text())
    assert meta["options"]["transpositions"] == "all" and meta["options"]["partial"] is True
    corr = json.loads((out / "correspondences.json").read_text())
    assert corr["transposition_names"] == list(TRANSPOSITIONS)
    matches = corr["pairs"][0]["matches"]
    assert [m["match"]["index"] for m in matches] == [0, 1, 2]
    assert [m["transposition"] for m in matches] == ["identity", "identity", "rot270"]  # the mirror matches as drawn
    t = np.load(out / "A-B" / "T.npy")
    assert t.dtype == np.int8 and t.shape == (3, 3) and t[2, 2] == TRANSPOSITIONS.index("rot270") and t[1, 1] == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["match", f"A={tmp_path / 'A'}", f"B={tmp_path / 'B'}", "--out", str(out), "--transpositions", "x"])
