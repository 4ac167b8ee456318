"""The default retrieval's fast parts give exactly what the plain versions give.

The numpy RRF, the fit from remembered header costs and the count of a
context from its lines' counts replace slower code on every default search;
each is checked here against the code it replaces, on generated input
(``tests/engine/retrieval/test_retrieval_identical.py`` checks whole searches).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem.fusion import rrf_merge, rrf_order
from omnimem.mau import MAU, Modality, Scope
from omnimem.engine.retrieval.pyramid import fit_costs, fit_lines
from omnimem.results import group_header
from omnimem.engine.deps import Deps
from omnimem.engine.retrieval.packing import FittingPacker, ReferencePacker
from omnimem.engine.retrieval.search import Retriever
from omnimem.engine.state import WriterState
from omnimem.tokens import count_joined, count_tokens

ids = st.lists(st.integers(min_value=0, max_value=60), max_size=40)


@settings(deadline=None, derandomize=True, database=None)  # exact checks, not timed; the same cases each run
@given(ids, ids, st.sampled_from([1, 10, 60]), st.sampled_from([1.0, 0.5, 1.7]))
def test_numpy_rrf_orders_like_rrf_merge(dense, sparse, k, weight):
    assert rrf_order(dense, sparse, k=k, sparse_weight=weight) == rrf_merge(dense, sparse, k=k, sparse_weight=weight)


def test_numpy_rrf_breaks_ties_by_dense_order_then_bm25_order():
    assert rrf_order([1, 3], [7, 9]) == [1, 7, 3, 9]
    assert rrf_order([], []) == [] and rrf_order([5, 5], []) == [5]


@settings(deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(1, 80), st.integers(0, 6)), max_size=60), st.integers(0, 600),
       st.booleans())
def test_fit_from_header_costs_decides_like_fit_lines(lines, budget, grouped):
    costs = [cost for cost, _ in lines]
    keys = [(group,) for _, group in lines] if grouped else None
    headers = {group: "[" + "x" * (3 * group + 1) + "]" for _, group in lines}
    header_costs = [count_tokens(headers[group]) for _, group in lines] if grouped else None
    expected = fit_lines(costs, keys, lambda i: headers[lines[i][1]], budget=budget, count=count_tokens)
    assert fit_costs(costs, keys, header_costs, budget=budget) == expected


# characters that matter to cl100k's pre-tokenizer at a line's end or start: letters, digits, punctuation,
# apostrophes (contractions), spaces, tabs, line breaks, accents, CJK, emoji
_CHARS = st.sampled_from(list("ab Z9.,!?'\"[]():-\n\t\r \u00e9\u4e2d\U0001F600") + ["'s", "'ll", "...", "  ", "123"])
_LINE = st.lists(_CHARS, max_size=10).map("".join)


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(_LINE, min_size=1, max_size=5))
def test_joined_count_from_line_counts_is_the_count_of_the_joined_text(lines):
    with_break = lambda line: count_tokens(line + "\n")  # noqa: E731
    assert count_joined(lines, with_break) == count_tokens("\n".join(lines))


def test_joined_count_of_context_lines():
    lines = ["[2023-05-08 13:56]", "Caroline: I painted a sunset.", "Melanie: Wow!", "[2023-05-09 09:00]",
             "Caroline: 'twas lovely... really", "(image photo.png) a lake"]
    assert count_joined(lines, lambda line: count_tokens(line + "\n")) == count_tokens("\n".join(lines))


def test_other_counters_count_the_joined_text():
    calls: list[str] = []

    def by_char(text: str) -> int:
        calls.append(text)
        return len(text)

    assert count_joined(["ab", "cd"], lambda line: 99, by_char) == 5 and calls == ["ab\ncd"]


def test_group_header_shows_each_zones_wall_time():
    """Headers are remembered per time: equal instants in other zones still show their own wall time."""
    utc = datetime(2023, 5, 8, 12, 0, tzinfo=timezone.utc)
    plus_two = utc.astimezone(timezone(timedelta(hours=2)))
    assert utc == plus_two
    unit = MAU("u", "s", Modality.TEXT, utc, utc, Scope(), "h")
    other = MAU("v", "s", Modality.TEXT, plus_two, utc, Scope(), "h")
    assert group_header(unit) == "[2023-05-08 12:00]"
    assert group_header(other) == "[2023-05-08 14:00]"


def test_a_scope_s_admitted_rows_follow_every_write(tmp_path):
    """The admitted row ids of a scope are remembered between searches, never past a write."""
    from omnimem import Memory

    with Memory(tmp_path / "store", embedder="fake") as m:
        first = m.add("Caroline painted a sunset over the lake", user_id="caroline").id
        m.add("Melanie ran a charity race", user_id="melanie")
        assert [h.unit.id for h in m.search("sunset lake", user_id="caroline").hits] == [first]
        second = m.add("Caroline painted a lake at dawn", user_id="caroline").id
        assert {h.unit.id for h in m.search("painted lake", user_id="caroline").hits} == {first, second}
        m.delete(first)
        assert [h.unit.id for h in m.search("painted lake", user_id="caroline").hits] == [second]
        newer = m.update(second, text="Caroline painted a lake at dusk").id
        assert [h.unit.id for h in m.search("painted lake", user_id="caroline").hits] == [newer]
        assert {h.unit.id for h in m.search("painted lake", user_id="caroline", include_superseded=True).hits} == {
            second, newer}
        m.forget(user_id="caroline")
        assert m.search("painted lake", user_id="caroline").hits == ()


def test_another_process_s_write_reaches_a_remembered_scope(tmp_path):
    """Two Memory objects on one store stand for two processes: the change counter tells the reader."""
    from omnimem import Memory

    with Memory(tmp_path / "store", embedder="fake") as writer:
        writer.add("Caroline painted a sunset", user_id="caroline")
        with Memory(tmp_path / "store", embedder="fake") as reader:
            assert len(reader.search("painted", user_id="caroline").hits) == 1
            later = writer.add("Caroline painted a lake", user_id="caroline").id
            assert later in {h.unit.id for h in reader.search("painted", user_id="caroline").hits}


def packing_everything(deps: Deps, state: WriterState) -> Retriever:
    """A retriever on the reference path: every candidate read and packed by ``build_context``."""
    slow = Retriever(deps, state)
    assert isinstance(slow.packer, FittingPacker)  # the packer these settings choose
    slow.packer = ReferencePacker(slow.packer, state, slow.candidates)
    return slow


@pytest.mark.parametrize("options", [{"whole_share": 0.5}, {"packing": "day"}, {"whole_share": 1.0, "budget": 400},
                                     {"whole_share": 0.25, "whole_top": 1, "budget": 500},
                                     {"line_words": 0, "budget": 300}, {"line_words": 3, "budget": 300}])
def test_fitting_rows_only_packs_like_packing_every_candidate(tmp_path, options):
    from omnimem import Memory

    reply = "The museum opens at nine; the ticket office is on the left, the cafe upstairs. " * 25
    turns = [{"speaker": "user" if i % 2 == 0 else "assistant",
              "text": reply if i == 5 else f"turn {i} about the museum visit and the weather",
              "time": f"2023-05-08T{9 + i // 6:02d}:{i % 6 * 7:02d}"} for i in range(24)]
    with Memory(tmp_path / "store", embedder="fake", **options) as m:
        m.add_dialogue(turns, user_id="u", session_id="s1")
        deps = m.engine.deps
        slow = packing_everything(deps, m.engine.state)
        for query in ["when does the museum open", "ticket office", "weather"]:
            args = (query, 0, deps.settings.theta, deps.settings.budget, Scope("u"), False, None)
            fast = m.engine.retriever.search(*args)
            assert fast.to_dict() == slow.search(*args).to_dict()
            assert fast.render() == slow.search(*args).render() and fast.tokens == count_tokens(fast.render())


def _sessions() -> list[tuple[str, list[dict[str, str]]]]:
    """Four sessions of a museum trip; a long reply in one (packed whole when it is among the best)."""
    reply = "The museum opens at nine; the ticket office is on the left, the cafe upstairs. " * 25
    out = []
    for s in range(4):
        turns = [{"speaker": "user" if i % 2 == 0 else "assistant",
                  "text": reply if (s, i) == (1, 5) else f"session {s} turn {i} about the museum visit and the weather",
                  "time": f"2023-05-{8 + s:02d}T{9 + i // 6:02d}:{i % 6 * 7:02d}"} for i in range(18)]
        out.append((f"s{s}", turns))
    return out


@pytest.mark.parametrize("options", [{"neighbours": 1}, {"neighbours": 2, "expand_top": 3, "budget": 500},
                                     {"diversity": 0.5}, {"diversity": 0.3, "neighbours": 1, "packing": "day"},
                                     {"graph": True, "top_k": 12}, {"neighbours": 1, "top_k": 5}])
def test_added_candidates_pack_like_packing_every_candidate(tmp_path, options):
    """Neighbours, diversity and the graph's units go through the one packer with the sources and scores
    they came with: the context equals the reference's, every candidate's row read and packed."""
    from omnimem import Memory
    from omnimem.engine.retrieval.packing import CandidatePacker

    with Memory(tmp_path / "store", embedder="fake", **options) as m:
        for session, turns in _sessions():
            m.add_dialogue(turns, user_id="u", session_id=session)
        assert m.flush(timeout=60)  # the graph's entities have landed: both searches see the same graph
        deps, retriever = m.engine.deps, m.engine.retriever
        assert isinstance(retriever.packer, CandidatePacker)  # these settings add candidates
        slow = Retriever(deps, m.engine.state)
        slow.packer = ReferencePacker(slow.packer, m.engine.state, slow.candidates)
        for query in ["when does the museum open", "ticket office", "the weather in session 2"]:
            args = (query, deps.settings.top_k, deps.settings.theta, deps.settings.budget, Scope("u"), False, None)
            fast = retriever.search(*args)
            assert fast.to_dict() == slow.search(*args).to_dict()
            assert fast.tokens == count_tokens(fast.render()) <= deps.settings.budget


@pytest.mark.parametrize("change", ["delete", "trust"])
def test_a_write_between_ranking_and_packing_leaves_the_row_out_or_counts_it_again(tmp_path, change):
    """The rows a ranking holds may be deleted, or their trust changed, before it is packed: the packer
    leaves a deleted row out, counts a changed one again (its line is fenced now), and gives the context
    the reference packer gives for the same ranking."""
    from omnimem import Memory

    with Memory(tmp_path / "store", embedder="fake") as m:
        for session, turns in _sessions():
            m.add_dialogue(turns, user_id="u", session_id=session)
        deps, retriever = m.engine.deps, m.engine.retriever
        budget, theta = deps.settings.budget, deps.settings.theta
        ranking = retriever.rank("ticket office", 0, budget, Scope("u"), False, None)
        before = retriever.pack("ticket office", ranking, 0, theta, budget, Scope("u"))  # facts and rows kept
        target = before.hits[0].unit.id
        if change == "delete":
            m.delete(target, user_id="u")
        else:
            m.set_trust(target, "untrusted", user_id="u")
        after = retriever.pack("ticket office", ranking, 0, theta, budget, Scope("u"))
        reference = ReferencePacker(retriever.packer, m.engine.state, retriever.candidates)
        assert after.to_dict() == reference.pack("ticket office", ranking, 0, theta, budget, Scope("u")).to_dict()
        shown = {h.unit.id: h for h in after.hits}
        if change == "delete":
            assert target not in shown
        else:
            assert shown[target].unit.trust == "untrusted" and "untrusted" in after.render()
        assert after.tokens == count_tokens(after.render()) <= budget
