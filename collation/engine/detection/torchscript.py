"""A learned detector from a TorchScript file: the model a library or a lab already has.

The file contract (docs/detection.md):

- a TorchScript module saved with ``torch.jit.save`` (e.g. an exported YOLO fine-tuned on
  manuscripts, wrapped so that it returns boxes), loaded on the CPU with ``torch.jit.load``;
- input: one image as a float32 tensor ``(1, 3, H, W)``, RGB, values in 0..1, the page resized so
  that its long side is ``input_size`` (default 640; a module attribute ``input_size: int``
  overrides it), no padding;
- output: a float tensor ``(N, 5)`` or ``(N, 6)``: ``x0, y0, x1, y1`` in the pixels of the input
  tensor, ``score`` in 0..1, and optionally a class index; or a tuple/list whose first element is
  such a tensor. A module attribute ``labels: List[str]`` names the classes (default
  "illustration"); boxes of every class are illustrations;
- the module may or may not apply NMS; boxes scoring below ``min_score`` are dropped, then
  class-agnostic NMS at IoU ``nms_iou`` (0.5) is applied here.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torchvision.ops import nms

from collation.core.errors import InputError

DEFAULT_INPUT_SIZE = 640
NMS_IOU = 0.5


class ModelDetector:
    """Boxes from a TorchScript detector file (contract in the module docstring)."""

    name = "model"

    def __init__(self, path: str | Path, *, min_score: float = 0.5, nms_iou: float = NMS_IOU):
        path = Path(path).expanduser()
        if not path.is_file():
            raise InputError(f"{path}: no such detector model file", field="detector_model")
        try:
            with warnings.catch_warnings():  # torch deprecates TorchScript for torch.export; loading still works
                warnings.filterwarnings("ignore", "`torch.jit.load` is deprecated", FutureWarning)
                self.module = torch.jit.load(str(path), map_location="cpu").eval()
        except (RuntimeError, ValueError) as e:
            raise InputError(
                f"{path}: not a TorchScript file ({str(e).splitlines()[0][:200]})", field="detector_model"
            ) from None
        self.path = path
        self.name = f"model:{path.name}"
        self.min_score, self.nms_iou = min_score, nms_iou
        self.input_size = int(getattr(self.module, "input_size", DEFAULT_INPUT_SIZE))
        self.labels = list(getattr(self.module, "labels", ["illustration"]))

    def __call__(self, image: Image.Image):
        from collation.engine.detection import Detection

        scale = self.input_size / max(image.size)
        w, h = max(1, round(image.width * scale)), max(1, round(image.height * scale))
        x = torch.from_numpy(np.asarray(image.convert("RGB").resize((w, h), Image.BILINEAR), dtype=np.float32))
        x = (x / 255.0).permute(2, 0, 1)[None].contiguous()
        with torch.inference_mode():
            out = self.module(x)
        if isinstance(out, (tuple, list)):
            out = out[0]
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[1] not in (5, 6):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise InputError(
                f"{self.path}: the detector returned {shape}, expected boxes (N, 5) or (N, 6)", field="detector_model"
            )
        out = out.float()
        out = out[out[:, 4] >= self.min_score]
        out = out[nms(out[:, :4], out[:, 4], self.nms_iou)]
        found = []
        for row in out.tolist():
            x0, y0, x1, y1 = (v / scale for v in row[:4])
            label = (
                self.labels[int(row[5])] if len(row) == 6 and 0 <= int(row[5]) < len(self.labels) else self.labels[0]
            )
            found.append(Detection((round(x0), round(y0), round(x1 - x0), round(y1 - y0)), round(row[4], 4), label))
        return found
