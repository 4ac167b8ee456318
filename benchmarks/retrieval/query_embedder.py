"""Can the int8 ONNX MiniLM embed *queries* for a store built with the torch MiniLM?

    python -m benchmarks query-embedder [--limit N] [--out benchmarks/results]

Every LoCoMo conversation is added to its own ``Memory`` with the torch model
(``all-MiniLM-L6-v2``, sentence-transformers); then every question with gold
evidence is searched twice in the same store, once with the query embedded by
the torch model and once by the int8 ONNX model (``all-MiniLM-L6-v2-int8``),
with the default retrieval (budgets 1,000 and 6,000 tokens). Reported: the
query vectors' cosine, how often both searches return the same candidates in
the same order, the overlap of their top 10 / 20, whether the rendered 6k
context is identical, and evidence recall (the retrieval benchmark's metrics,
:func:`benchmarks.harness.retrieval.score`) for both. Writes
``query-embedder.json`` and ``query-embedder.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.harness.retrieval import BUDGETS, METRICS, from_contexts, locomo_dataset, score
from omnimem import Memory, NotFoundError
from omnimem.embed import create_embedder
from omnimem.embed.base import Embedder, Vectors


class QueryModelSwitch:
    """The torch MiniLM under its own name, whose calls go to ``query`` once ``querying`` is set.

    What a store built with the torch model sees if its queries are embedded by another model.
    """

    def __init__(self, build: Embedder, query: Embedder) -> None:
        self.build, self.query = build, query
        self.name, self.dim = build.name, build.dim
        self.querying = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        return (self.query if self.querying else self.build).embed(texts)


def _sources(mem: Memory, user: str, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    found = {}
    for unit_id in ids:
        try:
            found[unit_id] = mem.get(unit_id, user_id=user).source_ids
        except NotFoundError:
            pass
    return found


def run(limit: int | None) -> dict[str, object]:
    data = Path(os.environ.get("OMNIMEM_DATA_DIR", "../shared/data")) / "locomo" / "locomo10.json"
    dataset = locomo_dataset(data, limit=limit)
    torch_model, onnx_model = create_embedder("all-MiniLM-L6-v2"), create_embedder("all-MiniLM-L6-v2-int8")
    sums: dict[str, dict[str, float]] = {"torch": defaultdict(float), "onnx": defaultdict(float)}
    cosines: list[float] = []
    same_ranking = same_top10 = 0
    context_overlap: dict[int, list[float]] = {b: [] for b in BUDGETS}
    overlap10: list[float] = []
    overlap20: list[float] = []
    asked = 0
    started = time.perf_counter()
    for conv in dataset.conversations:
        switch = QueryModelSwitch(torch_model, onnx_model)
        with Memory(embedder=switch) as mem:
            for dialogue in conv.dialogues:
                mem.add_dialogue(dialogue.turns, user_id=conv.sample_id, session_id=dialogue.session_id)
            texts = conv.turn_texts()
            for q in conv.questions:
                runs = {}
                for label, querying in (("torch", False), ("onnx", True)):
                    switch.querying = querying
                    contexts = {b: mem.search(q.query, budget=b, user_id=conv.sample_id) for b in BUDGETS}
                    runs[label] = from_contexts(contexts, lambda ids: _sources(mem, conv.sample_id, ids))
                    for key, value in score(q.gold, runs[label], texts).items():
                        sums[label][key] += value
                switch.querying = False
                a, b = runs["torch"], runs["onnx"]
                same_ranking += a.ranked == b.ranked
                same_top10 += a.ranked[:10] == b.ranked[:10]
                for budget in BUDGETS:
                    x, y = a.within[budget], b.within[budget]
                    context_overlap[budget].append(len(x & y) / max(1, len(x | y)))
                for n, into in ((10, overlap10), (20, overlap20)):
                    x, y = set(a.ranked[:n]), set(b.ranked[:n])
                    into.append(len(x & y) / max(1, len(x | y)))
                vt, vo = torch_model.embed([q.query])[0], onnx_model.embed([q.query])[0]
                cosines.append(float(np.dot(vt, vo)))
                asked += 1
    recall = {label: {m: round(sums[label][m] / asked, 4) for m in METRICS} for label in sums}
    return {
        "command": "python -m benchmarks query-embedder" + (f" --limit {limit}" if limit else ""),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "conversations": len(dataset.conversations), "turns": dataset.turns(), "questions": asked,
        "store_embedder": torch_model.name, "query_embedders": [torch_model.name, onnx_model.name],
        "query_cosine": {"min": round(min(cosines), 5), "p1": round(float(np.percentile(cosines, 1)), 5),
                         "median": round(statistics.median(cosines), 5)},
        "identical_candidate_ranking": round(same_ranking / asked, 4),
        "identical_top10": round(same_top10 / asked, 4),
        "top10_jaccard_mean": round(statistics.fmean(overlap10), 4),
        "top20_jaccard_mean": round(statistics.fmean(overlap20), 4),
        "context_turns_jaccard_mean": {str(b): round(statistics.fmean(v), 4) for b, v in context_overlap.items()},
        "recall": recall,
        "recall_difference_onnx_minus_torch": {m: round(recall["onnx"][m] - recall["torch"][m], 4) for m in METRICS},
        "seconds": round(time.perf_counter() - started, 1),
    }


def table(result: dict[str, object]) -> str:
    recall = result["recall"]
    assert isinstance(recall, dict)
    lines = [
        "# Query embeddings from the int8 ONNX MiniLM on a store built with the torch MiniLM",
        "",
        f"`{result['command']}` ({result['date']}): {result['conversations']} LoCoMo conversations, "
        f"{result['turns']} turns, {result['questions']} questions, default retrieval.",
        "",
        f"- query vector cosine (ONNX vs torch): {result['query_cosine']}",
        f"- identical candidate ranking: {result['identical_candidate_ranking']:.1%}; identical top 10: "
        f"{result['identical_top10']:.1%} (the deep candidate lists, 300 per retriever, differ in their tails)",
        f"- mean Jaccard of the top-10 / top-20 candidate sets: {result['top10_jaccard_mean']} / "
        f"{result['top20_jaccard_mean']}; of the turns in the 1k / 6k contexts: "
        f"{' / '.join(str(v) for v in result['context_turns_jaccard_mean'].values())}",  # type: ignore[attr-defined]
        "",
        "| query model | " + " | ".join(METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    for label, row in recall.items():
        lines.append(f"| {label} | " + " | ".join(f"{row[m]:.4f}" for m in METRICS) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks query-embedder", description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    result = run(args.limit)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "query-embedder.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "query-embedder.md").write_text(table(result))
    sys.stdout.write(table(result))


if __name__ == "__main__":
    main()
