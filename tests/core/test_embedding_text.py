"""What units are embedded by: their own words, optionally dated and after the turns before them."""

from datetime import datetime, timezone

import numpy as np

from omnimem import Memory
from omnimem.embed import FakeEmbedder
from omnimem.text import EmbedInput, embed_texts
from omnimem.mau import Modality, Scope

S1, S2 = Scope("u", None, "s1"), Scope("u", None, "s2")
WHEN = datetime(2023, 5, 8, tzinfo=timezone.utc)


def turn(scope: Scope, speaker: str, text: str, modality: Modality = Modality.TEXT) -> EmbedInput:
    return EmbedInput(scope, speaker, text, modality, WHEN)


def test_without_context_a_unit_is_embedded_as_who_said_what():
    assert embed_texts([turn(S1, "Mel", "What did you paint?")]) == ["Mel: What did you paint?"]
    assert embed_texts([turn(S1, "Mel", "hi")], dates=True) == ["[2023-05-08] Mel: hi"]


def test_context_prepends_the_turns_before_it_in_the_same_scope_only():
    items = [turn(S1, "Car", "What did you paint?"), turn(S2, "Bob", "Other session"),
             turn(S1, "Mel", "A sunset, last weekend!"), turn(S1, "Car", "Lovely"), turn(S1, "Mel", "Thanks")]
    texts = embed_texts(items, context=2)
    assert texts[2] == "Car: What did you paint?\nMel: A sunset, last weekend!"
    assert texts[1] == "Bob: Other session"
    assert texts[4] == "Mel: A sunset, last weekend!\nCar: Lovely\nMel: Thanks"  # at most two before


def test_history_continues_a_scope_and_media_are_not_context():
    items = [turn(S1, "Mel", "(photo caption)", Modality.IMAGE), turn(S1, "Mel", "That was the lake")]
    texts = embed_texts(items, context=2, history={S1: ["Car: Where did you go?"]})
    assert texts[0] == "Car: Where did you go?\nMel: (photo caption)"
    assert texts[1] == "Car: Where did you go?\nMel: That was the lake"


def test_turns_added_one_by_one_get_the_same_vectors_as_a_batch_and_reembed_keeps_them():
    turns = [{"text": f"turn {i} about thing {i * 7}", "speaker": "AB"[i % 2], "time": "2024-01-01", "id": f"D1:{i}"}
             for i in range(6)]
    with Memory(embedder="fake", embed_context=2) as batch, Memory(embedder="fake", embed_context=2) as single:
        batch.add_dialogue(turns, user_id="u", session_id="s")
        for t in turns:
            single.add(t["text"], speaker=t["speaker"], time=t["time"], source_id=t["id"], user_id="u", session_id="s")

        def vectors(mem: Memory) -> dict[str, np.ndarray]:
            return {u.source_ids[0]: u.embedding for u in mem.store.get(mem.store.ids_in_scope(Scope("u")))}

        one, other = vectors(batch), vectors(single)
        assert all(np.allclose(one[k], other[k]) for k in one)
        batch.reembed(FakeEmbedder())
        assert all(np.allclose(one[k], v) for k, v in vectors(batch).items())


def test_sparse_context_lets_bm25_find_a_reply_by_the_words_of_its_question(tmp_path):
    turns = [{"text": "What did you paint last weekend?", "speaker": "Car", "time": "2024-01-01", "id": "D1:1"},
             {"text": "A sunset over the lake.", "speaker": "Mel", "time": "2024-01-01", "id": "D1:2"},
             {"text": "Lovely colours.", "speaker": "Car", "time": "2024-01-01", "id": "D1:3"}]
    with Memory(embedder="fake", dense=False, sparse_context=0) as plain, \
            Memory(tmp_path, embedder="fake", dense=False, sparse_context=1) as ctx:
        plain.add_dialogue(turns, user_id="u", session_id="s")
        ctx.add_dialogue(turns, user_id="u", session_id="s")
        assert [h.unit.source_ids for h in plain.search("paint", user_id="u").hits] == [("D1:1",)]
        found = [h.unit.source_ids[0] for h in ctx.search("paint", user_id="u").hits]
        assert set(found) == {"D1:1", "D1:2"}
    with Memory(tmp_path, embedder="fake", dense=False, sparse_context=0) as reopened:  # saved BM25 had context: rebuilt
        assert [h.unit.source_ids for h in reopened.search("paint", user_id="u").hits] == [("D1:1",)]


def test_a_long_unit_gets_the_same_vector_from_ingest_and_from_reembed():
    long = "The workshop covered colour theory, brush technique and composition. " * 30  # over summary_words
    with Memory(embedder="fake", embed_context=1) as mem:
        mem.add("What was the workshop about?", speaker="Ann", user_id="u", session_id="s")
        uid = mem.add(long, speaker="Bob", user_id="u", session_id="s").id
        before = mem.get(uid).embedding
        mem.reembed(FakeEmbedder())
        assert np.allclose(before, mem.get(uid).embedding)
