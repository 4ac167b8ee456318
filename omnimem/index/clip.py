"""Text-to-image search with a user-supplied CLIP checkpoint.

Image units (photos and video frames) get a CLIP image vector next to their
text embedding, written as ``GraphRows.put_clip_vectors`` rows in the
transaction of their units; a query's CLIP text vector then finds images
whose captions never mention what is in them (``Candidates.images``, inside
the backend).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from omnimem.mau import MAU, Modality
from omnimem.store.base import Candidates, GraphRows, RowWriter, Vector


class ClipSearch:
    """The CLIP model: image vectors on ingest, text vectors at query time."""

    def __init__(self, embedder: object) -> None:
        from omnimem.media.clip import CLIPImageEmbedder

        assert isinstance(embedder, CLIPImageEmbedder)
        self.embedder = embedder

    def writer(
        self, units: Sequence[MAU], raw: Mapping[str, bytes]
    ) -> RowWriter | None:
        """Embed the images among ``units`` (slow; outside locks) and return the row writer.

        ``raw`` holds the new units' bytes by cold-tier reference (not stored yet).
        """
        images = [u for u in units if u.modality is Modality.IMAGE and u.raw_ref in raw]
        if not images:
            return None
        vectors = self.embedder.embed_images([raw[u.raw_ref or ""] for u in images])
        rows = [(u.id, self.embedder.name, np.asarray(v, dtype=np.float32)) for u, v in zip(images, vectors)]

        def write(store: GraphRows) -> None:
            store.put_clip_vectors(rows)

        return write

    def search(self, query: str, k: int, candidates: Candidates) -> list[tuple[int, float]]:
        """Admitted image units nearest to the query's CLIP text vector."""
        vector: Vector = np.asarray(self.embedder.embed_texts([query])[0], dtype=np.float32)
        return candidates.images(vector, self.embedder.name, k)
