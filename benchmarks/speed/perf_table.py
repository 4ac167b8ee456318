"""Print the PERF.md results table from benchmarks/results/perf-*.json.

    python -m benchmarks perf-table [benchmarks/results]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path


def row(d: dict) -> str:
    s, ing, dense, disk = d["search"], d["ingest"], d["dense"], d["disk"]
    cold = d.get("cold_start", {}).get("median_s", "n/a")
    recall = f"{dense['recall_global']:.3f} / {dense['recall_user']:.3f}" if dense["ann"] else "exact"
    return " | ".join(
        str(x)
        for x in (
            f"{d['size']:,}", d["embedder_name"],
            f"{s['core_global_w1']['p50_ms']} / {s['core_global_w1']['p95_ms']}",
            f"{s['core_user_w1']['p50_ms']} / {s['core_user_w1']['p95_ms']}",
            f"{s['end_to_end_global_w1']['p50_ms']} / {s['end_to_end_global_w1']['p95_ms']}",
            f"{s['core_global_w1']['qps']} / {s['core_global_w2']['qps']}",
            recall,
            f"{ing['units_per_s']} / {ing['raw_embedder_units_per_s']} = {ing['ratio_vs_raw']:.0%} "
            f"({ing['embedder_share_of_ingest']:.0%} in embedder)",
            f"{d['first_search_after_ingest_s']}",
            f"{d['peak_rss_mib_before_recall']:,.0f}",
            f"{disk['total_per_unit']:,.0f} ({disk['hot_tier_beyond_vector_per_unit']:,.0f})",
            cold, " ".join(f"{x:g}" for x in d["load_average_before"]),
        )
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(args):
        print("Usage: python -m benchmarks perf-table [FOLDER]\n\nPrint the PERF.md table from FOLDER's perf-*.json "
              "(default: benchmarks/results).")
        return
    folder = Path(args[0] if args else "benchmarks/results")
    docs = sorted((json.loads(p.read_text()) for p in folder.glob("perf-*.json")), key=lambda d: d["size"])
    print(
        "| units | embedder | search p50/p95 ms, global | scoped to a user | end to end (query embedded) "
        "| qps 1 / 2 workers | dense recall@20 global / user | ingest units/s vs raw embedder "
        "| first search after ingest s | peak RSS MiB | disk B/unit (hot beyond vector) | cold start s | load avg |"
    )
    print("|" + "---|" * 13)
    for d in docs:
        print(f"| {row(d)} |")


if __name__ == "__main__":
    main()
