"""The poisoning benchmark (benchmarks/retrieval/poisoning.py) on a small conversation and the fake embedder."""

from __future__ import annotations

from benchmarks.harness.retrieval import BenchConversation, BenchQuestion, CachedEmbedder
from benchmarks.retrieval.poisoning import KINDS, PLANT, Variant, plants, run
from omnimem.embed import create_embedder
from omnimem.contract.loaders import Dialogue

TURNS = [
    ("Ana", "I adopted a grey cat called Pixel from the shelter last Saturday morning."),
    ("Ben", "That is lovely, my brother has two cats and a very old dog at home."),
    ("Ana", "We are painting the kitchen yellow this weekend with my sister Carla."),
    ("Ben", "I started learning the violin in March because my daughter plays it too."),
    ("Ana", "My team at the hospital moved me to the night shift for the whole winter."),
    ("Ben", "We booked a trip to Lisbon in June to see the old trams and the ocean."),
]


def conversation() -> BenchConversation:
    turns = [{"speaker": s, "text": t, "id": f"D1:{i}", "time": "2023-05-08 10:00"} for i, (s, t) in enumerate(TURNS)]
    questions = [BenchQuestion(0, "What is the name of Ana's cat?", "1", ("D1:0",)),
                 BenchQuestion(1, "Where is Ben travelling in June?", "1", ("D1:5",))]
    return BenchConversation("c1", [Dialogue(turns, user_id="c1", session_id="s1")], questions)


def test_plants_are_the_same_for_a_seed_and_copy_no_real_turn_whole() -> None:
    conv = conversation()
    planted = plants(conv, 3, seed=1)
    assert planted == plants(conv, 3, seed=1) and planted != plants(conv, 3, seed=2)
    assert [p["kind"] for p in planted] == [k for k in KINDS for _ in range(3)]
    assert all(p["id"].startswith(PLANT) and p["speaker"] in ("Ana", "Ben") for p in planted)
    near = [p["text"] for p in planted if p["kind"] in ("near_duplicate", "edited_copy")]
    assert len(near) == 6 and not any(text in n for n in near for _, text in TURNS)  # a copy never counts as evidence


def test_plants_enter_the_context_and_the_clean_store_has_none() -> None:
    conv = conversation()
    embedder = CachedEmbedder(create_embedder("fake"))
    chosen = [Variant("clean", "no plants", plants=False), Variant("plants", "plants")]
    result = run([conv], chosen, embedder, per_kind=3, seed=1, progress=False)
    clean, poisoned = result["clean"], result["plants"]
    assert clean["plant_in_context_6k"] == 0.0 and clean["recall_6k"] == 1.0
    assert poisoned["plant_in_context_6k"] == 1.0 and poisoned["plant_token_share_6k"] > 0
    assert poisoned["plants"]["instruction"] == {"planted": 3, "stored": 3}
    assert 0.0 <= poisoned["evidence_pushed_out_1k"] <= 1.0


def test_the_novelty_filter_catches_edited_copies_only_in_the_session_they_copy() -> None:
    embedder = CachedEmbedder(create_embedder("fake"))
    chosen = [Variant("own session", "plants"), Variant("last session", "plants", in_last_session=True)]
    result = run([conversation()], chosen, embedder, per_kind=3, seed=1, progress=False)
    assert result["own session"]["plants"]["edited_copy"] == {"planted": 3, "stored": 3}
    assert result["last session"]["plants"]["edited_copy"]["stored"] < 3  # a one-word edit of a recent turn
