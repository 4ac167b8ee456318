"""A hit's score is its similarity to the query the user asked, names and all (issue 36, item 5).

A query naming a speaker is ranked without the name (the speaker is matched as a field), but the score
a hit reports, and theta's level-2 cut that reads it, must measure the hit against the question asked:
otherwise "where does Ann live" scores Ann's answer below an unrelated turn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from omnimem import Memory

TURNS = [
    {"speaker": "Ann", "text": "I live in Lisbon, near the river.", "time": "2024-05-01T10:00"},
    {"speaker": "Bob", "text": "The seed packets arrived for the garden.", "time": "2024-05-01T10:01"},
    {"speaker": "Ann", "text": "Ann loves the old trams there.", "time": "2024-05-02T10:00"},
    {"speaker": "Bob", "text": "Where does the bus stop now?", "time": "2024-05-02T10:01"},
]


@pytest.mark.parametrize("dense_without_names", [True, False])
def test_a_named_speakers_query_scores_hits_against_the_question_asked(tmp_path: Path,
                                                                      dense_without_names: bool) -> None:
    query = "where does Ann live"
    with Memory(tmp_path / "m", embedder="fake", novelty=False,
                dense_without_names=dense_without_names) as mem:
        mem.add_dialogue(TURNS, user_id="ann")
        asked = mem.embedder.embed([query])[0]
        for _ in range(2):  # the first search learns the scope's speakers, the second strips the name up front
            ctx = mem.search(query, user_id="ann")
            assert ctx.hits
            for hit in ctx.hits:
                assert hit.unit.embedding is not None
                assert float(np.dot(asked, hit.unit.embedding)) == pytest.approx(hit.score, abs=1e-6)


def test_theta_reads_the_honest_score(tmp_path: Path) -> None:
    """Level 2 (the whole text) goes to hits at least theta similar to the question asked."""
    query = "where does Ann live"
    with Memory(tmp_path / "m", embedder="fake", novelty=False) as mem:
        mem.add_dialogue(TURNS, user_id="ann")
        mem.search(query, user_id="ann")
        ctx = mem.search(query, user_id="ann", theta=-1.0)
        assert {h.level for h in ctx.hits} == {2}  # every hit clears -1
        best = max(h.score for h in ctx.hits)
        ctx = mem.search(query, user_id="ann", theta=best + 1e-6)
        assert {h.level for h in ctx.hits} == {1}



def test_langchains_metadata_score_and_the_http_answer_are_the_honest_score(tmp_path: Path) -> None:
    """What a LangChain document and a served search report is that same similarity to the question asked."""
    from omnimem.integrations.langchain import OmnimemRetriever
    from tests.serving import ServedMemory

    query = "where does Ann live"
    with Memory(tmp_path / "m", embedder="fake", novelty=False) as mem:
        mem.add_dialogue(TURNS, user_id="ann")
        asked = mem.embedder.embed([query])[0]
        embeddings = {u.id: u.embedding for u in mem.store.get([h.unit.id for h in mem.search(query).hits])}
        for doc in OmnimemRetriever(memory=mem, user_id="ann").invoke(query):
            assert float(np.dot(asked, embeddings[doc.metadata["id"]])) == pytest.approx(doc.metadata["score"],
                                                                                         abs=1e-6)
    served = ServedMemory(Memory(tmp_path / "m", embedder="fake", novelty=False))
    try:
        for hit in served.search(query, user_id="ann").hits:
            assert float(np.dot(asked, embeddings[hit.unit.id])) == pytest.approx(hit.score, abs=1e-5)
    finally:
        served.close()
