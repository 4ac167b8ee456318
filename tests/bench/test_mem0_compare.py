"""The mem0 comparison gives both systems the same conversations, texts and questions."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.speed.mem0_compare import conversations, mem0_input, summary
from omnimem import Memory
from omnimem.mau import search_text


def _locomo(path: Path) -> Path:
    sample = {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten."},
                          {"speaker": "Ben", "dia_id": "D1:2", "text": "What is its name?"}],
            "session_2_date_time": "2:10 pm on 9 May, 2023",
            "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Her name is Miso."}],
        },
        "qa": [{"question": "What did Ana adopt?", "answer": "a kitten"},
               {"question": "What is the kitten called?", "answer": "Miso"}],
    }
    other = {**sample, "sample_id": "conv-b"}
    path.write_text(json.dumps([sample, other]), encoding="utf-8")
    return path


def test_mem0_gets_the_texts_omnimem_embeds_session_by_session(tmp_path: Path) -> None:
    convs = conversations(_locomo(tmp_path / "locomo.json"), limit=1, questions=1)
    assert [c["user_id"] for c in convs] == ["conv-a"]
    given = mem0_input(convs)
    assert given == [{"user_id": "conv-a", "questions": ["What did Ana adopt?"],
                      "sessions": [["Ana: I adopted a kitten.", "Ben: What is its name?"], ["Ana: Her name is Miso."]]}]
    with Memory(embedder="fake") as mem:  # omnimem stores the same turns, one unit per turn
        for d in convs[0]["dialogues"]:
            mem.add_dialogue(d.turns, user_id=d.user_id, session_id=d.session_id)
        units = mem.search("kitten Miso", user_id="conv-a").hits
        stored = {search_text(h.unit.speaker, h.unit.summary) for h in units}
    assert stored == {text for session in given[0]["sessions"] for text in session}


def test_a_summary_counts_every_pass_turns_and_searches() -> None:
    passes = [{"turns": 30, "stored": 30, "add_seconds": 1.0, "search_seconds": [0.010, 0.030]},
              {"turns": 30, "stored": 29, "add_seconds": 2.0, "search_seconds": [0.020, 0.040]}]
    assert summary(passes) == {"turns": 60, "stored": 59, "add_seconds": 3.0, "turns_per_s": 20.0,
                               "search_p50_ms": 25.0, "search_p95_ms": 40.0, "searches": 4}
