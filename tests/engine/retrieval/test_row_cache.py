"""Searches reuse the units they read while the store is unchanged, and never a unit a write has changed.

A search remembers the rows it packed with the store's change counter
(:mod:`omnimem.engine.retrieval.row_cache`); every write moves the counter, in
this process or another, so the next search reads afresh. Each check compares a
search of a warm memory with the same search of a memory opened afresh on the
same store, which has nothing remembered.
"""

from __future__ import annotations

from pathlib import Path

from omnimem import Memory
from omnimem.engine.retrieval.row_cache import RowCache
from omnimem.mau import MAU, Modality, Scope

TURNS = [
    {"speaker": "Ada", "text": "I adopted a grey cat called Pixel last spring.", "time": "2026-03-01T10:00:00Z"},
    {"speaker": "Ben", "text": "Pixel sounds lovely, what does the cat eat?", "time": "2026-03-01T10:01:00Z"},
    {"speaker": "Ada", "text": "Pixel eats salmon and sleeps on my keyboard.", "time": "2026-03-01T10:02:00Z"},
    {"speaker": "Ben", "text": "My dog Rex prefers long walks by the river.", "time": "2026-03-02T09:00:00Z"},
]


def _seen(m: Memory, query: str, **options: object) -> list[tuple[str, str | None, int, str]]:
    ctx = m.search(query, user_id="u1", **options)  # type: ignore[arg-type]
    return [(h.unit.id, h.unit.superseded_by, h.level, h.text) for h in ctx.hits] + [("", None, ctx.tokens, "")]


def _fresh(path: Path, query: str, **options: object) -> list[tuple[str, str | None, int, str]]:
    with Memory(path, embedder="fake") as other:
        return _seen(other, query, **options)


def test_a_warm_search_gives_what_a_fresh_memory_gives_after_every_kind_of_write(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memory(path, embedder="fake") as m:
        m.add_dialogue(TURNS, user_id="u1", session_id="s1")
        first = _seen(m, "what does Pixel eat")
        assert _seen(m, "what does Pixel eat") == first == _fresh(path, "what does Pixel eat")
        salmon = next(h.unit for h in m.search("Pixel salmon keyboard", user_id="u1").hits if "salmon" in h.unit.summary)

        m.update(salmon.id, text="Pixel eats tuna now and sleeps on the sofa.")  # supersession: the old row changes
        after_update = _seen(m, "what does Pixel eat", include_superseded=True)
        assert after_update == _fresh(path, "what does Pixel eat", include_superseded=True)
        assert any(uid == salmon.id and by is not None for uid, by, _, _ in after_update)

        m.add("Ada's cat Pixel also likes chicken.", user_id="u1", session_id="s2", time="2026-03-03T08:00:00Z")
        assert _seen(m, "what does Pixel eat") == _fresh(path, "what does Pixel eat")

        gone = m.search("Rex walks river", user_id="u1").hits[0].unit.id
        m.delete(gone, user_id="u1")
        assert gone not in {uid for uid, *_ in _seen(m, "Rex walks river")}
        assert _seen(m, "Rex walks river") == _fresh(path, "Rex walks river")


def test_a_write_by_another_memory_on_the_same_store_is_seen_at_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memory(path, embedder="fake") as m:
        m.add_dialogue(TURNS, user_id="u1", session_id="s1")
        before = _seen(m, "Pixel salmon")
        assert _seen(m, "Pixel salmon") == before  # remembered now
        with Memory(path, embedder="fake") as other:  # another engine, its own cache: as another process
            other.forget(user_id="u1", session_id="s1", reason="test")
        assert _seen(m, "Pixel salmon") == [("", None, 0, "")]


def _unit(n: int) -> MAU:
    from datetime import datetime, timezone

    return MAU(f"u{n}", f"text {n}", Modality.TEXT, None, datetime(2026, 1, 1, tzinfo=timezone.utc), Scope("a"),
               f"h{n}")


def test_the_cache_answers_only_for_the_counter_value_its_rows_were_read_at() -> None:
    cache = RowCache(limit=3)
    fetched: list[list[int]] = []

    def fetch(rids: list[int]) -> dict[int, MAU]:
        fetched.append(rids)
        return {rid: _unit(rid) for rid in rids if rid != 99}  # row 99 is gone

    assert set(cache.read([1, 2, 99], 5, fetch)) == {1, 2}
    cache.keep(5, {1: _unit(1), 2: _unit(2)})
    assert set(cache.read([1, 2], 5, fetch)) == {1, 2} and fetched == [[1, 2, 99]]  # nothing fetched again
    cache.read([1], 6, fetch)  # the store moved on: read afresh
    assert fetched[-1] == [1]
    cache.keep(4, {7: _unit(7)})  # read at an older value than what is remembered: not kept
    cache.read([7], 5, fetch)
    assert fetched[-1] == [7]
    cache.keep(5, {3: _unit(3), 4: _unit(4)})  # over the limit: cleared, then kept
    cache.read([1, 3], 5, fetch)
    assert fetched[-1] == [1]
