"""Recall question by question: two folders of the same six retrieval runs (LoCoMo, Mem-Gallery, LongMemEval;
dev and test), one made with queries embedded by the store's torch MiniLM, one by its int8 ONNX copy.

    python -m benchmarks query-recall --before benchmarks/results/archive/final/default-48 \\
        --after benchmarks/results/archive/final/query-onnx --out benchmarks/results/archive/final/query-onnx/compare.json

Each split's JSON holds every question's recall within 1,000 and 6,000 tokens (``per_question``) and the
overall figures; the comparison counts the questions whose recall moved, up and down, and sets the overall
figures side by side. It reads the files only: the runs are made by the commands recorded in them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SPLITS = ("locomo-dev", "locomo-test", "memgallery-dev", "memgallery-test", "longmemeval-dev", "longmemeval-test")
OVERALL = ("@5", "@10", "@20", "1k", "6k")
SYSTEM = "omnimem"


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """One split: questions moved per budget, and the overall figures of both runs."""
    per_b, per_a = before["per_question"][SYSTEM], after["per_question"][SYSTEM]
    moved: dict[str, dict[str, int]] = {}
    for budget in ("1k", "6k"):
        pairs = list(zip(per_b[budget], per_a[budget], strict=True))
        moved[budget] = {"up": sum(a > b for b, a in pairs), "down": sum(a < b for b, a in pairs)}
    overall_b, overall_a = before["systems"][SYSTEM]["overall"], after["systems"][SYSTEM]["overall"]
    return {"questions": len(per_b["1k"]), "moved": moved,
            "before": {k: overall_b[k] for k in OVERALL}, "after": {k: overall_a[k] for k in OVERALL},
            "commands": {"before": before["command"], "after": after["command"]}}


def table(result: dict[str, Any]) -> str:
    lines = ["# Query embeddings: torch MiniLM against its int8 ONNX copy, every split", "",
             f"Command: `{result['command']}`. Before: `{result['before']}` (queries by the torch model); after: "
             f"`{result['after']}` (the default since `fast_queries`: queries by the int8 ONNX copy; the stored "
             "vectors are the torch model's in both).", "",
             "| split | questions | 1k moved up / down | 6k moved up / down | "
             + " | ".join(f"{k} before / after" for k in OVERALL) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(OVERALL)]
    for split, row in result["splits"].items():
        m = row["moved"]
        lines.append(f"| {split} | {row['questions']} | {m['1k']['up']} / {m['1k']['down']} | "
                     f"{m['6k']['up']} / {m['6k']['down']} | "
                     + " | ".join(f"{row['before'][k]} / {row['after'][k]}" for k in OVERALL) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks query-recall", description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="folder of the six runs with torch queries")
    parser.add_argument("--after", type=Path, required=True, help="folder of the six runs with ONNX queries")
    parser.add_argument("--out", type=Path, required=True, help="JSON file (a .md table is written beside it)")
    args = parser.parse_args(argv)
    command = "python -m benchmarks query-recall " + " ".join(
        ["--before", str(args.before), "--after", str(args.after), "--out", str(args.out)])
    splits = {}
    for split in SPLITS:
        before = json.loads((args.before / f"{split}.json").read_text())
        after = json.loads((args.after / f"{split}.json").read_text())
        splits[split] = compare(before, after)
    result = {"benchmark": "query-recall", "command": command, "before": str(args.before),
              "after": str(args.after), "splits": splits}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
