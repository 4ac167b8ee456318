"""The facade, used the way the README shows, on the fast fake embedder (once per engine)."""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from omnimem import Memory, Modality, NotFoundError
from tests.serving import in_process

TURNS = [
    {"speaker": "Melanie", "text": "I painted a sunset with a palm tree last weekend.", "time": "2023-07-15T10:00", "id": "D1:1"},
    {"speaker": "Caroline", "text": "Wow, I love the colours. I went to a pride parade.", "time": "2023-07-15T10:01", "id": "D1:2"},
    {"speaker": "Melanie", "text": "My kids and I went camping at the lake.", "time": "2023-07-15T10:02", "id": "D1:3"},
]


def test_add_search_get_round_trip(mem: Memory):
    res = mem.add("I painted a sunset last weekend", user_id="mel", speaker="Melanie", time="2023-05-08T13:56")
    assert res.accepted and res.id
    ctx = mem.search("what did Mel paint? sunset", user_id="mel")
    assert ctx.hits[0].unit.id == res.id
    unit = mem.get(res.id)
    assert unit.speaker == "Melanie" and unit.modality is Modality.TEXT
    assert unit.event_time is not None and unit.event_time.isoformat() == "2023-05-08T13:56:00+00:00"
    assert unit.record_time.tzinfo is not None
    assert 0 < ctx.tokens <= ctx.budget == 6000


def test_add_dialogue_keeps_source_ids_links_and_order(mem: Memory):
    results = mem.add_dialogue(TURNS, user_id="c1", session_id="s1")
    ids = [r.id for r in results]
    assert all(r.accepted for r in results)
    units = [mem.get(i) for i in ids]
    assert [u.source_ids for u in units] == [("D1:1",), ("D1:2",), ("D1:3",)]
    assert units[1].links.prev_id == ids[0] and units[1].links.next_id == ids[2]
    hits = mem.search("camping at the lake", user_id="c1").hits
    assert hits[0].unit.source_ids == ("D1:3",)


def test_reingest_is_idempotent(mem: Memory):
    first = mem.add_dialogue(TURNS, user_id="c1", session_id="s1")
    again = mem.add_dialogue(TURNS, user_id="c1", session_id="s1")
    assert all(not r.accepted and r.reason == "duplicate" for r in again)
    assert [r.duplicate_of for r in again] == [r.id for r in first]
    assert mem.stats()["units"] == 3


def test_novelty_filter_rejects_near_repeats_and_can_be_off(make_memory: Callable[..., Memory]):
    with make_memory() as m:
        m.add("we should go hiking in the alps next summer", user_id="u")
        res = m.add("We should go hiking in the Alps next summer!!", user_id="u", time="2024-01-02")
        assert not res.accepted and res.reason.startswith("redundant") and res.similarity == 1.0
        other_user = m.add("we should go hiking in the alps next summer", user_id="v")
        assert other_user.accepted  # another scope is another memory
    with make_memory(novelty=False) as m:
        m.add("we should go hiking in the alps next summer", user_id="u")
        assert m.add("We should go hiking in the Alps next summer!!", user_id="u", time="2024-01-02").accepted


def test_scope_isolation_even_when_one_scope_is_tiny(mem: Memory):
    mem.add_dialogue(
        [{"speaker": "Bob", "text": f"my secret number {i} is about sunsets and paint"} for i in range(300)],
        user_id="big",
    )
    mine = mem.add("I painted a sunset", user_id="small", speaker="Ann").id
    ctx = mem.search("sunset paint", user_id="small", top_k=5)
    assert [h.unit.id for h in ctx.hits] == [mine]
    other = mem.search("sunset paint", user_id="big", top_k=20)
    assert mine not in {h.unit.id for h in other.hits}
    assert all(h.unit.user_id == "big" for h in other.hits)


def test_scope_filters_combine(mem: Memory):
    mem.add("alpha note", user_id="u", agent_id="a1", session_id="s1")
    b = mem.add("alpha note beta", user_id="u", agent_id="a2", session_id="s1").id
    ctx = mem.search("alpha", user_id="u", agent_id="a2")
    assert [h.unit.id for h in ctx.hits] == [b]


def test_delete_removes_from_every_index(mem: Memory):
    ids = [r.id for r in mem.add_dialogue(TURNS, user_id="c1", session_id="s1")]
    mem.delete(ids[0])
    with pytest.raises(NotFoundError):
        mem.get(ids[0])
    for query in ("painted a sunset palm tree", "sunset"):  # dense and BM25 both
        assert ids[0] not in {h.unit.id for h in mem.search(query).hits}
    assert mem.get(ids[1]).links.prev_id is None
    assert mem.stats()["index"] == {"dense": 2, "sparse": 2}
    with pytest.raises(NotFoundError):
        mem.delete(ids[0])


def test_forget_a_user_leaves_nothing_searchable(mem: Memory):
    mem.add_dialogue(TURNS, user_id="mel", session_id="s1")
    keep = mem.add("Caroline painted a sunset too", user_id="car").id
    assert mem.forget(user_id="mel") == 3
    hits = mem.search("sunset painted palm tree camping").hits
    assert [h.unit.id for h in hits] == [keep]
    assert mem.stats()["units"] == 1


def test_forget_requires_a_scope(mem: Memory):
    from omnimem import InvalidInputError

    mem.add("something", user_id="u")
    with pytest.raises(InvalidInputError):
        mem.forget()
    assert mem.stats()["units"] == 1


def test_long_text_goes_to_the_cold_tier_and_comes_back_at_level_two(store_path: Path):
    long = "The workshop covered colour theory, brush technique and composition. " * 20
    with Memory(store_path, embedder="fake") as m:
        uid = m.add(long, user_id="u").id
        unit = m.get(uid)
        assert unit.raw_ref is not None and unit.summary.endswith("…")
        assert (store_path / "cold" / unit.raw_ref[:2] / unit.raw_ref).read_text() == long.strip()
        ctx = m.search("workshop colour theory brush technique composition", theta=0.0)
        assert ctx.hits[0].level == 2 and long.strip() in ctx.render()
        m.delete(uid)
        assert not (store_path / "cold" / unit.raw_ref[:2] / unit.raw_ref).exists()


def test_a_long_text_not_shown_whole_says_a_brief_line_but_is_found_by_all_its_summary(
        make_memory: Callable[..., Memory]):
    long = "The workshop covered colour theory and brush technique. " + " ".join(f"note{i}" for i in range(150))
    brief, before = make_memory(line_words=5), make_memory(line_words=0)
    for m in (brief, before):
        m.add(long, user_id="u")
        m.add("We met at the cafe after the workshop.", user_id="u")
    # note70 is in the stored summary (its first 100 words), not in the 5 words its line shows
    ctx = brief.search("note70", user_id="u", budget=120, theta=1.0)
    hit = next(h for h in ctx.hits if h.unit.raw_ref is not None)
    assert hit.level == 1 and hit.text == "The workshop covered colour theory …"
    assert len(hit.unit.summary.split()) == 101 and "note70" in hit.unit.summary  # 100 words and the " …"
    assert ctx.tokens <= 120 and "We met at the cafe after the workshop." in ctx.render()
    # line_words=0: the whole summary line, as before, which 120 tokens cannot hold
    assert all(h.unit.raw_ref is None for h in before.search("note70", user_id="u", budget=120, theta=1.0).hits)
    whole_line = next(h for h in before.search("note70", user_id="u", budget=600, theta=1.0).hits
                      if h.unit.raw_ref is not None)
    assert whole_line.level == 1 and whole_line.text == hit.unit.summary


def test_reopen_loads_saved_indexes_and_rebuilds_stale_ones(store_path: Path):
    with Memory(store_path, embedder="fake") as m:
        ids = [r.id for r in m.add_dialogue(TURNS, user_id="c1", session_id="s1")]
    with Memory(store_path) as m:  # embedder comes from the store
        assert m.embedder.name == "fake"
        assert m.indexes.rebuilds == 0  # loaded from disk
        assert m.search("camping lake").hits[0].unit.id == ids[2]
    shutil.rmtree(store_path / "index")
    with Memory(store_path) as m:
        assert m.indexes.rebuilds == 1
        assert m.search("camping lake").hits[0].unit.id == ids[2]


def test_writes_by_another_handle_are_seen(store_path: Path):
    with Memory(store_path, embedder="fake") as a, Memory(store_path) as b:
        uid = a.add("a memory about a blue bicycle", user_id="u").id
        assert b.search("blue bicycle").hits[0].unit.id == uid
        b.delete(uid)
        assert a.search("blue bicycle").hits == ()


def test_closed_memory_refuses_work(store_path: Path):
    from omnimem import StoreError

    m = Memory(store_path, embedder="fake")
    m.close()
    m.close()
    with pytest.raises(StoreError):
        m.add("x")


def test_ablation_switches(make_memory: Callable[..., Memory]):
    turns = [{"speaker": "A", "text": t} for t in ("zebra crossing downtown", "a striped horse at the zoo", "lunch")]
    with make_memory(sparse=False) as m:
        m.add_dialogue(turns)
        assert all(h.sources == {"dense"} for h in m.search("zebra").hits)
    with make_memory(dense=False, sparse_context=0) as m:  # BM25 over each turn's own words
        m.add_dialogue(turns)
        hits = m.search("zebra").hits
        assert [h.unit.summary for h in hits] == ["zebra crossing downtown"] and hits[0].sources == {"sparse"}
    long = "word " * 100 + "zebra"
    with make_memory(max_level=1) as m:
        m.add(long)
        assert m.search("zebra", theta=0.0).hits[0].level == 1


def test_contradictory_settings_are_refused():
    from omnimem import ConfigError

    with pytest.raises(ConfigError):
        Memory(embedder="fake", dense=False, sparse=False)
    with pytest.raises(ConfigError):
        Memory(embedder="fake", novelty_threshold=2)
    with pytest.raises(ConfigError, match="whole_share"):
        Memory(embedder="fake", whole_share=1.5)
    with pytest.raises(ConfigError, match="whole_top"):
        Memory(embedder="fake", whole_top=-1)
    with pytest.raises(ConfigError, match="sparse_depth"):
        Memory(embedder="fake", sparse_depth=-1)
    with pytest.raises(ConfigError, match="line_words"):
        Memory(embedder="fake", line_words=-1)
    with pytest.raises(ConfigError, match="packing session, day or line"):
        Memory(embedder="fake", packing="days")


def test_neighbours_of_the_best_hits_join_the_context(mem: Memory):
    turns = [
        {"speaker": "Caroline", "text": "What did you make in the pottery class?", "time": "2023-07-01T10:00", "id": "D1:1"},
        {"speaker": "Melanie", "text": "A blue bowl with a dragonfly on it.", "time": "2023-07-01T10:00", "id": "D1:2"},
        {"speaker": "Caroline", "text": "Lovely!", "time": "2023-07-01T10:00", "id": "D1:3"},
    ]
    mem.add_dialogue(turns, user_id="u", session_id="s1")
    mem.add("unrelated note about taxes", user_id="other", session_id="s1")
    with Memory(embedder="fake", dense=False, sparse_context=0, neighbours=1) as m:  # BM25 finds only the question
        m.add_dialogue(turns, user_id="u", session_id="s1")
        hits = m.search("pottery class", user_id="u").hits
        assert [h.unit.source_ids[0] for h in hits][:2] == ["D1:1", "D1:2"]
        assert hits[1].sources == {"neighbour"}
    with Memory(embedder="fake", dense=False, sparse_context=0, neighbours=0) as m:
        m.add_dialogue(turns, user_id="u", session_id="s1")
        assert [h.unit.source_ids[0] for h in m.search("pottery class", user_id="u").hits] == ["D1:1"]


def test_paper_mode_union_and_lines_is_available(make_memory: Callable[..., Memory]):
    with make_memory(fusion="union", packing="line", neighbours=0) as m:
        m.add("the red kayak is in the garage", speaker="Ann", time="2024-06-01T10:00", user_id="u")
        ctx = m.search("red kayak", user_id="u")
        assert ctx.render() == "[2024-06-01 10:00] Ann: the red kayak is in the garage"
        assert ctx.packing == "line"


def test_exists_tells_a_store_from_any_other_path(tmp_path: Path):
    assert not Memory.exists(tmp_path / "nothing") and not Memory.exists(tmp_path)
    with Memory(tmp_path / "mem", embedder="fake"):
        pass
    assert Memory.exists(tmp_path / "mem") and Memory.exists(str(tmp_path / "mem"))
    assert not (tmp_path / "nothing").exists()


def test_sparse_depth_bounds_the_bm25_list(tmp_path):
    """sparse_depth: BM25 contributes its best N candidates to the fusion, dense still reads the budget's depth."""
    places = ["Oslo", "Porto", "Cork", "Bari", "Gdansk", "Split", "Nantes", "Malmo", "Riga", "Vigo", "Brest", "Kiel"]
    things = ["gulls", "fog", "rain", "ferries", "chips", "maps", "kites", "storms", "boots", "tea", "waves", "sand"]
    turns = [{"speaker": "Ann", "text": f"my lighthouse trip to {p} was all about the {t}"}
             for p, t in zip(places, things)]
    for depth, most in ((0, 12), (3, 3)):
        with Memory(tmp_path / f"d{depth}", embedder="fake", sparse_depth=depth, budget=2000) as m:
            m.add_dialogue(turns, user_id="u", session_id="s1")
            hits = m.search("lighthouse trip", user_id="u").hits
            bm25 = sorted(h.ranks["sparse"] for h in hits if "sparse" in h.ranks)
            assert bm25 == list(range(1, most + 1))  # the BM25 ranks seen are exactly its first N
            assert sum("dense" in h.ranks for h in hits) == 12  # dense reads as deep as before
