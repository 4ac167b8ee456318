"""BM25 matches a question on its content words: the "what", "did", "you" of a question decide no match."""

from __future__ import annotations

from pathlib import Path

from omnimem import Memory
from omnimem.text import content_words


def test_content_words_drop_a_full_english_stop_list_but_keep_months_and_names():
    assert content_words("What did Alex paint?") == "Alex paint"
    assert content_words("Can you remind me what I said about my car in May?") == "remind said car May"
    assert content_words("Didn't she like it?") == "like"
    assert content_words("What did you do?") == "What did you do?"  # nothing left: the query is kept whole


def test_a_turn_sharing_only_question_words_is_not_a_bm25_hit(tmp_path: Path):
    turns = [{"speaker": "Ann", "text": "Nice! What did you make first?"},
             {"speaker": "Bob", "text": "A watercolour of the lighthouse, my first painting"}]
    for stop in (True, False):
        with Memory(tmp_path / f"m{stop}", embedder="fake", query_stop_words=stop) as mem:
            mem.add_dialogue(turns, user_id="u", session_id="s")
            ctx = mem.search("What did Bob paint?", user_id="u")
            by_text = {h.unit.summary: h for h in ctx.hits}
            frame = by_text["Nice! What did you make first?"]
            assert ("sparse" in frame.ranks) is not stop  # "what" and "did" match only without the stop list
            painting = by_text["A watercolour of the lighthouse, my first painting"]
            assert painting.ranks["sparse"] == 1  # "Bob" and "paint" match either way
