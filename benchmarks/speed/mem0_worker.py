"""mem0's side of ``benchmarks/speed/mem0_compare.py``, run by mem0's own interpreter (its own virtual environment).

    /tmp/mem0-venv/bin/python benchmarks/speed/mem0_worker.py INPUT.json MODEL_PATH WORK_DIR

Imports nothing of omnimem. ``INPUT.json`` holds the conversations (sessions of ``speaker: text`` turns and
the questions, scoped by user); each conversation goes into a fresh mem0 ``Memory`` (FAISS on disk, the
history in SQLite, the ``huggingface`` embedder on the packaged MiniLM folder, ``infer=False``: no LLM).
One ``add`` per session with its turns as messages, then every question searched in the conversation's
user scope (top 20). Prints one JSON object: turns, seconds, search latencies, versions.
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.metadata import version

if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # this folder's modules (perf.py, commands.py, ...) would shadow the libraries mem0 imports

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("OPENAI_API_KEY", "sk-offline-unused")  # mem0 builds its LLM client; infer=False never calls it
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main(source: str, model: str, work: str) -> dict[str, object]:
    import logging

    logging.disable(logging.WARNING)  # mem0 warns once that FAISS has no keyword search
    from mem0 import Memory

    with open(source, encoding="utf-8") as f:
        conversations = json.load(f)

    def fresh(i: int) -> Memory:
        folder = os.path.join(work, f"conv-{i}")
        os.makedirs(folder, exist_ok=True)
        return Memory.from_config({
            "embedder": {"provider": "huggingface", "config": {"model": model}},
            "vector_store": {"provider": "faiss", "config": {"path": os.path.join(folder, "faiss"),
                                                             "collection_name": "bench", "embedding_model_dims": 384}},
            "history_db_path": os.path.join(folder, "history.db"),
        })

    warm = fresh(-1)  # the model, FAISS and the history table before timing
    warm.add([{"role": "user", "content": "load everything before timing"}], user_id="warm-up", infer=False)
    warm.search("and the search path", filters={"user_id": "warm-up"}, top_k=20)
    add_s, turns, stored, latencies = 0.0, 0, 0, []
    for i, conv in enumerate(conversations):
        mem = fresh(i)
        start = time.perf_counter()
        for session in conv["sessions"]:
            messages = [{"role": "user", "content": text} for text in session]
            stored += len(mem.add(messages, user_id=conv["user_id"], infer=False)["results"])
            turns += len(session)
        add_s += time.perf_counter() - start
        for q in conv["questions"]:
            start = time.perf_counter()
            mem.search(q, filters={"user_id": conv["user_id"]}, top_k=20)
            latencies.append(time.perf_counter() - start)
    return {"turns": turns, "stored": stored, "add_seconds": add_s, "search_seconds": latencies,
            "versions": {name: version(name) for name in ("mem0ai", "faiss-cpu", "sentence-transformers", "torch")}}


if __name__ == "__main__":
    json.dump(main(*sys.argv[1:4]), sys.stdout)
