"""Question answering benchmarks with the configured LLM (``python -m benchmarks ... --qa``).

Each conversation goes into its own Memory through the public API; every
question is answered by ``Memory.ask`` with the benchmark's own instructions
(prompts for benchmarks live here, never in the library) and scored with the
official rules (``benchmarks.harness.scoring``). Writes one JSON line per question
(question, gold, prediction, evidence ids used, category, score) and a JSON
file of aggregated scores.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness.datasets import load_locomo as load_locomo_qa
from benchmarks.harness.datasets import load_memgallery_dir
from benchmarks.harness.retrieval import memgallery_dialogues
from benchmarks.harness.scoring import aggregate_locomo, aggregate_memgallery, score_locomo, score_memgallery
from omnimem import Memory, __version__
from omnimem.embed.base import Embedder
from omnimem.contract.loaders import load_locomo
from omnimem.llm.base import LLM

LOCOMO_INSTRUCTIONS = (
    "You answer questions about a long conversation between two people, using only the memories given. "
    "Each group of memories starts with the date and time it was said. Turn relative expressions "
    "('yesterday', 'last week') into dates using that time. Answer with a short phrase of a few words, "
    "not a sentence. If the memories do not contain the answer, reply exactly: No information available."
)
MEMGALLERY_INSTRUCTIONS = (
    "You answer questions about a person's past conversations with an assistant, using only the memories "
    "given (images appear through their captions). Answer briefly and precisely. If the memories do not "
    "contain the answer, say that you cannot answer from memory."
)


@dataclass(frozen=True)
class QAItem:
    conversation: str
    question: str
    gold: str | None
    category: str


def _ask_all(mem: Memory, user_id: str, items: list[QAItem], instructions: str, budget: int,
             workers: int) -> list[tuple[QAItem, Any]]:
    answers = mem.ask_many([i.question for i in items], workers=workers, user_id=user_id,
                           instructions=instructions, budget=budget)
    return list(zip(items, answers))


def run_qa(
    benchmark: str, data_dir: Path, llm: LLM, embedder: Embedder, out: Path, *, limit: int | None = None,
    budget: int = 6000, workers: int = 4, progress: Callable[[str], None] = lambda _: None,
) -> Path:
    """Answer and score every question; returns the path of the scores JSON."""
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    if benchmark == "locomo":
        path = data_dir / "locomo" / "locomo10.json"
        dialogues = load_locomo(path)
        for sample in load_locomo_qa(path)[:limit]:
            items = [QAItem(sample.sample_id, q.question, q.answer, str(q.category)) for q in sample.qa]
            with Memory(embedder=embedder, llm=llm) as mem:
                for d in (d for d in dialogues if d.user_id == sample.sample_id):
                    mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
                for item, answer in _ask_all(mem, sample.sample_id, items, LOCOMO_INSTRUCTIONS, budget, workers):
                    prediction = answer.answer or ""
                    score = score_locomo(prediction, item.gold, int(item.category))
                    rows.append(_row(item, answer, {"f1": score}))
            progress(f"{sample.sample_id}: {len(items)} questions")
        report = aggregate_locomo((int(r["category"]), r["scores"]["f1"]) for r in rows)
        scores: dict[str, Any] = {
            "categories": {c: {"name": s.name, "count": s.count, "f1": round(s.mean, 4)}
                           for c, s in report.categories.items()},
            "overall": round(report.overall, 4), "overall_1_4": round(report.overall_without_adversarial, 4),
        }
    else:
        for gallery in load_memgallery_dir(data_dir / "memgallery")[:limit]:
            items = [QAItem(gallery.name, q.question, q.answer, q.qa_type) for q in gallery.qa]
            with Memory(embedder=embedder, llm=llm) as mem:
                for d in memgallery_dialogues(gallery):
                    mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
                for item, answer in _ask_all(mem, gallery.name, items, MEMGALLERY_INSTRUCTIONS, budget, workers):
                    s = score_memgallery(answer.answer or "", item.gold or "")
                    rows.append(_row(item, answer, {"f1": s.f1, "em": s.exact_match, "bleu1": s.bleu1,
                                                    "bleu2": s.bleu2}))
            progress(f"{gallery.name}: {len(items)} questions")
        per_type = aggregate_memgallery((r["category"], score_memgallery(r["prediction"], r["gold"] or ""))
                                        for r in rows)
        scores = {t: {k: round(float(v), 4) for k, v in vars(s).items()} for t, s in per_type.items()}
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{benchmark}-qa"
    with open(out / f"{stem}-predictions.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    usage = llm.usage()
    result = {
        "benchmark": benchmark, "kind": "qa", "command": f"python -m benchmarks {benchmark} --qa", "scores": scores,
        "questions": len(rows), "llm": {"name": llm.name, "calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
                                        "completion_tokens": usage.completion_tokens},
        "embedder": embedder.name, "budget": budget, "omnimem": __version__, "seconds": round(time.perf_counter() - started, 1),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    path = out / f"{stem}.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path


def _row(item: QAItem, answer: Any, scores: dict[str, float]) -> dict[str, Any]:
    return {
        "conversation": item.conversation, "question": item.question, "gold": item.gold,
        "prediction": answer.answer, "category": item.category, "scores": scores,
        "evidence": sorted({s for h in answer.evidence for s in h.unit.source_ids}),
        "tokens": answer.context.tokens,
    }
