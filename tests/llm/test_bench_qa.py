"""omnimem bench locomo --qa through the real openai client against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_openai import Reply, chat
from typer.testing import CliRunner

from omnimem.cli.commands import app


def tiny_locomo(root: Path) -> Path:
    conv = {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "I painted a sunset with my kids."},
        ],
    }
    qa = [
        {"question": "When did Caroline go to the support group?", "answer": "7 May 2023", "evidence": ["D1:1"],
         "category": 2},
        {"question": "What did Melanie paint?", "answer": "a sunset", "evidence": ["D1:2"], "category": 4},
        {"question": "What did Caroline paint?", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "sunset"},
    ]
    path = root / "locomo" / "locomo10.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conv, "qa": qa}]))
    return root


def test_locomo_qa_writes_predictions_and_scores(server, tmp_path: Path, monkeypatch):
    answers = {"support group": "7 May 2023", "Melanie paint": "A sunset.", "Caroline paint": "No information available."}

    def respond(body: dict[str, Any]) -> Reply:
        question = body["messages"][-1]["content"].split("Question: ")[1]
        assert body["messages"][0]["content"].startswith("You answer questions about a long conversation")
        return chat(next(a for key, a in answers.items() if all(w in question for w in key.split())))

    server.responder = respond
    monkeypatch.setenv("OMNIMEM_LLM_BASE_URL", server.url)
    monkeypatch.setenv("OMNIMEM_LLM_MODEL", "m")
    data = tiny_locomo(tmp_path / "data")
    out = tmp_path / "results"
    res = CliRunner().invoke(app, ["bench", "locomo", "--qa", "--data-dir", str(data), "--out", str(out),
                                   "--embedder", "fake"])
    assert res.exit_code == 0, res.output
    scores = json.loads((out / "locomo-qa.json").read_text())
    assert scores["questions"] == 3 and scores["scores"]["overall"] == 1.0
    assert scores["scores"]["categories"]["5"]["f1"] == 1.0 and scores["llm"]["calls"] == 3
    rows = [json.loads(line) for line in (out / "locomo-qa-predictions.jsonl").read_text().splitlines()]
    painted = next(r for r in rows if r["question"] == "What did Melanie paint?")
    assert painted["gold"] == "a sunset" and painted["prediction"] == "A sunset." and painted["scores"]["f1"] == 1.0
    assert "D1:2" in painted["evidence"] and painted["category"] == "4"


def test_qa_without_a_model_is_a_one_line_error(tmp_path: Path):
    res = CliRunner().invoke(app, ["bench", "locomo", "--qa", "--data-dir", str(tiny_locomo(tmp_path / "d"))])
    assert res.exit_code == 2 and res.stderr.startswith("error: --qa needs an LLM")
