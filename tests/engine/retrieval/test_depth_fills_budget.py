"""``depth=0`` reads each retriever deep enough to fill the budget, short messages included.

The first depth is ``budget // 20`` candidates per retriever, which fills a
budget of turns of 20 tokens or more. A chat of short messages (5-8 tokens a
line) runs out of candidates first: the search then reads deeper, with the
same query vectors, until a candidate no longer fits or the scope has no more.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.retrieval.packing_cost import plain_tokens, short_chats, short_queries
from omnimem import Memory
from omnimem.embed.fake import ExactFakeEmbedder


class CountingEmbedder(ExactFakeEmbedder):
    """``fake-exact`` that counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return super().embed(texts)


def chats(path: Path, embedder: object = "fake-exact", **options: object) -> Memory:
    mem = Memory(path, embedder=embedder, **options)  # type: ignore[arg-type]
    for user, session, dialogue in short_chats(2000):
        mem.add_dialogue(dialogue, user_id=user, session_id=session)
    return mem


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chats") / "store"
    chats(path).close()
    return path


def test_a_budget_of_short_messages_is_filled_not_cut_at_the_first_depth(store: Path):
    with Memory(store, embedder="fake-exact") as mem, Memory(store, embedder="fake-exact", depth=50) as first:
        for text, user in short_queries(8):
            ctx = mem.search(text, budget=1000, user_id=user)
            cut = first.search(text, budget=1000, user_id=user)  # what the first depth alone packs
            assert cut.tokens < 700 and not cut.dropped  # ran out of candidates with room left
            assert ctx.dropped and len(ctx.hits) > 3 * len(cut.hits) // 2 > 0  # filled until a line did not fit
            assert 900 < ctx.tokens <= 1000
            assert {h.unit.id for h in cut.hits[:10]} <= {h.unit.id for h in ctx.hits}  # the best stay in


def test_a_short_message_context_holds_as_many_turns_per_token_as_a_plain_list(store: Path):
    """Day headers and stamps where the chat resumes, paid for by the names of lines that go on (``"auto"``)."""
    with Memory(store, embedder="fake-exact") as mem:
        for budget in (1000, 6000):
            found = [mem.search(text, budget=budget, user_id=user) for text, user in short_queries(8)]
            assert sum(ctx.tokens for ctx in found) <= sum(plain_tokens(ctx) for ctx in found)
            assert all(ctx.tokens <= budget for ctx in found)


def test_reading_deeper_embeds_the_query_once(tmp_path: Path):
    counting = CountingEmbedder()
    with chats(tmp_path / "store", counting) as mem:
        before = counting.texts
        ctx = mem.search("who has the kite?", budget=1000, user_id="user-3")
        assert len(ctx.hits) > 1000 // 20 and counting.texts == before + 1


def test_a_depth_or_top_k_given_is_kept(store: Path):
    with Memory(store, embedder="fake-exact", depth=20) as mem:
        ctx = mem.search("who has the kite?", budget=1000, user_id="user-3")
        assert len(ctx.hits) <= 40 and not ctx.dropped  # dense's 20 and BM25's 20 at most, room left
    with Memory(store, embedder="fake-exact") as mem:
        assert len(mem.search("who has the kite?", budget=1000, user_id="user-3", top_k=30).hits) <= 30


def test_a_scope_smaller_than_the_depth_is_read_once(tmp_path: Path):
    counting = CountingEmbedder()
    with Memory(tmp_path / "store", embedder=counting) as mem:
        mem.add_dialogue([{"speaker": "Ann", "text": f"the kite, take {i}"} for i in range(12)], user_id="u")
        ctx = mem.search("kite", budget=1000, user_id="u")
    assert len(ctx.hits) == 12 and not ctx.dropped


def test_a_planned_search_reads_the_question_deeper_too(store: Path):
    with Memory(store, embedder="fake-exact", planner="offline") as mem:
        ctx = mem.search("who has the kite?", budget=1000, user_id="user-3")
        with Memory(store, embedder="fake-exact", planner="offline", depth=50) as first:
            cut = first.search("who has the kite?", budget=1000, user_id="user-3")
    assert ctx.plan is not None and ctx.plan.planner == "offline"
    assert not cut.dropped and cut.tokens < 800  # the planned rounds' candidates at the first depth leave room
    assert ctx.dropped and 900 < ctx.tokens <= 1000 and len(ctx.hits) > len(cut.hits)
