"""PII redaction (``redact_pii``): precision and recall per kind on the labelled synthetic set, and the cost per add.

Quality: every sentence of :func:`benchmarks.reliability.redaction_data.examples`
(seeded, the same each run) is added on its own and read back from the export;
each placeholder is aligned with the text it replaced; a labelled span is found when a
finding of its kind overlaps it, and leaked when any of its text is still in
the redacted sentence; a finding is right when it overlaps a labelled span of
its kind. Cost: the same sentences added one by one (``Memory.add``) and as one
``add_dialogue`` to an in-memory store on the fake embedder, with
``redact_pii`` off and on, so the difference is the redaction's own time.

    python -m benchmarks redaction                 # 600 sentences; writes redaction.json, redaction.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from omnimem import Memory

from benchmarks.harness.paths import RESULTS
from benchmarks.reliability.redaction_data import Example, examples


PLACEHOLDER = re.compile(r"<(EMAIL|IBAN|CARD|ACCOUNT|PHONE|ADDRESS|PERSON)>")
KINDS = ("EMAIL", "IBAN", "CARD", "ACCOUNT", "PHONE", "ADDRESS", "PERSON")


def findings(original: str, redacted: str) -> list[tuple[int, int, str]]:
    """Where each placeholder of ``redacted`` stands in ``original`` (``(start, end, kind)``), by aligning the two."""
    kinds = [m.group(1) for m in PLACEHOLDER.finditer(redacted)]
    pattern = "".join(re.escape(part) if i % 2 == 0 else "(.+?)"
                      for i, part in enumerate(PLACEHOLDER.split(redacted)) if i % 2 == 0 or part)
    m = re.fullmatch(pattern, original, flags=re.DOTALL)
    if m is None:  # the text changed beyond its placeholders: every placeholder counts as wrong
        return [(-1, -1, kind) for kind in kinds]
    return [(m.start(i + 1), m.end(i + 1), kind) for i, kind in enumerate(kinds)]


def score(sentences: list[Example], redacted: list[str]) -> dict[str, Any]:
    """Per kind and overall: labelled spans, findings, precision, recall, and spans leaked."""
    per: dict[str, dict[str, int]] = {k: {"labelled": 0, "found": 0, "findings": 0, "right": 0, "leaked": 0}
                                      for k in KINDS}
    for example, text in zip(sentences, redacted):
        found = findings(example.text, text)
        for start, end, kind in example.spans:
            row = per[kind]
            row["labelled"] += 1
            row["found"] += any(k == kind and s < end and start < e for s, e, k in found)
            row["leaked"] += _leaks(example.text[start:end], text)
        for s, e, k in found:
            per[k]["findings"] += 1
            per[k]["right"] += any(kind == k and s < end and start < e for start, end, kind in example.spans)
    total = {key: sum(row[key] for row in per.values()) for key in ("labelled", "found", "findings", "right", "leaked")}
    return {"kinds": {k: _rates(v) for k, v in per.items()}, "all": _rates(total)}


def stored_texts(texts: list[str]) -> list[str]:
    """Each text as ``Memory(redact_pii=True).add`` stores it (read back from the export)."""
    with Memory(embedder="fake", redact_pii=True, novelty=False) as m:
        ids = []
        for i, text in enumerate(texts):
            added = m.add(text, user_id="u", session_id=f"s{i}")
            ids.append(added.id or added.duplicate_of)
        stored = {r["id"]: r["text"] for r in m.export(user_id="u") if r["kind"] == "unit"}
    return [stored[i] for i in ids]


def _leaks(value: str, redacted: str) -> bool:
    """Whether a part of the value that identifies (a word of 3+ letters or 4+ digits) is still in the text."""
    return any(re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", redacted)
               for piece in re.findall(r"[^\W\d_]{3,}|\d{4,}", value)
               if piece.lower() not in ("street", "road", "avenue", "lane", "drive", "close", "court", "way",
                                        "place", "boulevard", "apt"))


def _rates(row: dict[str, int]) -> dict[str, Any]:
    precision = row["right"] / row["findings"] if row["findings"] else None
    recall = row["found"] / row["labelled"] if row["labelled"] else None
    return {**row, "precision": None if precision is None else round(precision, 4),
            "recall": None if recall is None else round(recall, 4),
            "leak_rate": round(row["leaked"] / row["labelled"], 4) if row["labelled"] else None}


def cost(sentences: list[Example], repeats: int) -> dict[str, Any]:
    """Milliseconds per add, wall clock and this process's CPU, with redact_pii off and on (medians of
    ``repeats`` runs, off and on taking turns so that a busy machine slows both alike)."""
    texts = [e.text for e in sentences]
    with Memory(embedder="fake", redact_pii=True) as warm:  # the model's load is not an add's cost
        warm.add("warm-up for Anna Smith", user_id="warm")
    runs: dict[str, list[float]] = {}
    for r in range(repeats):
        for on in (False, True):
            key = "on" if on else "off"
            for what in ("add", "dialogue"):
                with Memory(embedder="fake", redact_pii=on, novelty=False) as m:
                    wall, cpu = time.perf_counter(), time.process_time()
                    if what == "add":
                        for i, text in enumerate(texts):
                            m.add(text, user_id="u", session_id=f"s{r}-{i}")
                    else:
                        m.add_dialogue([{"text": t, "speaker": "user"} for t in texts], user_id="u")
                    runs.setdefault(f"{what}_ms_{key}", []).append((time.perf_counter() - wall) * 1000 / len(texts))
                    runs.setdefault(f"{what}_cpu_ms_{key}", []).append((time.process_time() - cpu) * 1000 / len(texts))
    out: dict[str, Any] = {k: round(statistics.median(v), 3) for k, v in runs.items()}
    for what in ("add_ms", "add_cpu_ms", "dialogue_ms", "dialogue_cpu_ms"):
        out[f"{what}_added"] = round(out[f"{what}_on"] - out[f"{what}_off"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks redaction", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=600, help="sentences in the synthetic set")
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument("--cost-sentences", type=int, default=200, help="sentences added for the cost per add")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "redaction.json")
    args = parser.parse_args(argv)
    sentences = examples(args.count, seed=args.seed)
    result = {
        "command": " ".join(["python -m benchmarks redaction", *(argv if argv is not None else sys.argv[1:])]),
        "sentences": len(sentences), "seed": args.seed,
        "with_sentences": sum(1 for e in sentences if e.spans),
        "quality": score(sentences, stored_texts([e.text for e in sentences])),
        "cost": cost(sentences[:args.cost_sentences], args.repeats),
        "cost_sentences": min(args.cost_sentences, len(sentences)),
        "embedder": "fake", "machine": f"{platform.machine()}, {platform.python_version()}, {os.cpu_count()} CPUs",
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(result: dict[str, Any]) -> str:
    q, c = result["quality"], result["cost"]
    lines = [
        "# PII redaction (`redact_pii`)", "",
        f"Command: `{result['command'].strip()}`. {result['sentences']} synthetic sentences (seed {result['seed']}), "
        f"{result['with_sentences']} with personal data. A span is found when a finding of its kind overlaps it; "
        "leaked when a word or 4+ digit run of it is still in the redacted text.", "",
        "| kind | labelled | precision | recall | leak rate |", "|---|---|---|---|---|",
    ]
    for kind, row in [*q["kinds"].items(), ("all", q["all"])]:
        lines.append(f"| {kind} | {row['labelled']} | {row['precision']} | {row['recall']} | {row['leak_rate']} |")
    lines += [
        "",
        f"Cost ({result['cost_sentences']} sentences, fake embedder, in-memory store, medians of runs, load average "
        f"{result['load_average'][0]} on {result['machine']}): `add` {c['add_cpu_ms_off']} ms of CPU off, "
        f"{c['add_cpu_ms_on']} ms on (+{c['add_cpu_ms_added']} ms; wall +{c['add_ms_added']} ms); `add_dialogue` "
        f"{c['dialogue_cpu_ms_off']} ms of CPU per turn off, {c['dialogue_cpu_ms_on']} ms on "
        f"(+{c['dialogue_cpu_ms_added']} ms; wall +{c['dialogue_ms_added']} ms).", "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
