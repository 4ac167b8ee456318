"""Chroma's side of ``benchmarks/speed/peer_compare.py``, run by Chroma's own interpreter (its own virtual environment).

    /tmp/chroma-venv/bin/python benchmarks/speed/chroma_worker.py INPUT.json MODEL_PATH WORK_DIR

Imports nothing of omnimem. ``INPUT.json`` is what the mem0 worker reads (sessions of ``speaker: text`` turns
and the questions, scoped by user). Each conversation goes into a fresh ``chromadb.PersistentClient`` folder
(Chroma's embedded mode: SQLite and its HNSW index on disk, no server) with one collection whose embedding
function is Chroma's ``SentenceTransformerEmbeddingFunction`` on the packaged MiniLM folder (the weights
omnimem's default embedder loads; Chroma's own default, an ONNX MiniLM, is downloaded at first use, and pads
every text to 256 tokens). One ``add`` per session with its turns as documents and the user as metadata,
then every question queried in the conversation's user scope (``where={"user_id": ...}``, top 20). Prints
one JSON object: turns, seconds, search latencies, versions.
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.metadata import version
from typing import Any

if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # this folder's modules (perf.py, commands.py, ...) would shadow the libraries Chroma imports

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def measure(source: str, model: str, work: str) -> dict[str, object]:
    import chromadb
    from chromadb.config import Settings
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    with open(source, encoding="utf-8") as f:
        conversations = json.load(f)
    embed = SentenceTransformerEmbeddingFunction(model_name=model, device="cpu")

    def fresh(i: int) -> Any:
        client = chromadb.PersistentClient(path=os.path.join(work, f"conv-{i}"),
                                           settings=Settings(anonymized_telemetry=False))
        return client.create_collection("bench", embedding_function=embed)

    warm = fresh(-1)  # the model, the index and SQLite before timing
    warm.add(ids=["w"], documents=["load everything before timing"], metadatas=[{"user_id": "warm-up"}])
    warm.query(query_texts=["and the search path"], n_results=1, where={"user_id": "warm-up"})
    add_s, turns, stored, latencies = 0.0, 0, 0, []
    for i, conv in enumerate(conversations):
        collection = fresh(i)
        start = time.perf_counter()
        for s, session in enumerate(conv["sessions"]):
            ids = [f"{s}-{t}" for t in range(len(session))]
            collection.add(ids=ids, documents=session,
                           metadatas=[{"user_id": conv["user_id"]} for _ in session])
            stored += len(ids)
            turns += len(session)
        add_s += time.perf_counter() - start
        for q in conv["questions"]:
            start = time.perf_counter()
            collection.query(query_texts=[q], n_results=20, where={"user_id": conv["user_id"]})
            latencies.append(time.perf_counter() - start)
    return {"turns": turns, "stored": stored, "add_seconds": add_s, "search_seconds": latencies,
            "versions": {name: version(name) for name in ("chromadb", "sentence-transformers", "torch")}}


if __name__ == "__main__":
    json.dump(measure(*sys.argv[1:4]), sys.stdout)  # not main(): a worker, not a command of its own
