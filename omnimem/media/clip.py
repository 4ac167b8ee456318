"""CLIP image and text embeddings from a checkpoint folder the user provides.

No package ships CLIP weights, so this provider never guesses a model: it
loads ``CLIPModel`` plus the tokenizer and image processor saved next to it
(``save_pretrained`` layout) with ``local_files_only=True``. Images and texts
land in the same L2-normalised space, so a text query can find a photo.

The class also satisfies the text ``Embedder`` protocol (``name``, ``dim``,
``embed``) so it can be registered like any other embedder.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from omnimem.errors import ConfigError
from omnimem.media._deps import require

if TYPE_CHECKING:
    from PIL.Image import Image

Vectors = npt.NDArray[np.float32]


class CLIPImageEmbedder:
    """Embeds images and texts with a local CLIP checkpoint; loads lazily, thread-safe."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        device: str = "cpu",
        batch_size: int = 16,
        name: str | None = None,
    ) -> None:
        self.path = Path(path)
        config_file = self.path / "config.json"
        if not config_file.is_file():
            raise ConfigError(f"{self.path} is not a CLIP checkpoint folder (no config.json)")
        config = json.loads(config_file.read_text(encoding="utf-8"))
        if "projection_dim" not in config:
            raise ConfigError(f"{config_file} has no projection_dim; is it a CLIPModel config?")
        self.dim: int = int(config["projection_dim"])
        self.name: str = name or f"clip:{self.path.resolve().name}"
        self.device = device
        self.batch_size = batch_size
        self._parts: tuple[Any, Any, Any] | None = None
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Text embeddings (the ``Embedder`` protocol's method)."""
        return self.embed_texts(texts)

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """L2-normalised text vectors, shape ``(len(texts), dim)``."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model, tokenizer, _ = self._load()
        max_len = int(model.config.text_config.max_position_embeddings)
        rows = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            inputs = tokenizer(
                batch, padding=True, truncation=True, max_length=max_len, return_tensors="pt"
            )
            rows.append(self._features(model.get_text_features, inputs))
        return _normalise(np.concatenate(rows))

    def embed_images(self, images: Sequence[bytes | Image]) -> Vectors:
        """L2-normalised image vectors; items are encoded bytes or PIL images."""
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        from omnimem.media.image import decode_image

        model, _, processor = self._load()
        rows = []
        for start in range(0, len(images), self.batch_size):
            batch = [
                (decode_image(item) if isinstance(item, bytes) else item).convert("RGB")
                for item in images[start : start + self.batch_size]
            ]
            inputs = processor(images=batch, return_tensors="pt")
            rows.append(self._features(model.get_image_features, inputs))
        return _normalise(np.concatenate(rows))

    def _features(self, method: Any, inputs: Any) -> npt.NDArray[np.float32]:
        torch = require("torch", "vision")
        with torch.inference_mode():
            output = method(**{key: value.to(self.device) for key, value in inputs.items()})
        # transformers 4 returns a tensor, 5 a model output holding the projection.
        tensor = output if isinstance(output, torch.Tensor) else output.pooler_output
        return np.asarray(tensor.float().cpu().numpy(), dtype=np.float32)

    def _load(self) -> tuple[Any, Any, Any]:
        with self._lock:
            if self._parts is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                require("torch", "vision")
                transformers = require("transformers", "vision")
                where = str(self.path)
                model = transformers.CLIPModel.from_pretrained(where, local_files_only=True)
                model.to(self.device).eval()
                tokenizer = transformers.AutoTokenizer.from_pretrained(where, local_files_only=True)
                processor = transformers.AutoImageProcessor.from_pretrained(
                    where, local_files_only=True
                )
                self._parts = (model, tokenizer, processor)
            return self._parts


def _normalise(vectors: npt.NDArray[np.float32]) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)
