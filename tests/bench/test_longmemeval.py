"""LongMemEval-S in the retrieval harness: loading, per-question users, the published metrics, the command."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.harness.retrieval import CachedEmbedder, cache_key
from benchmarks.harness.sessions import session_metrics
from benchmarks.retrieval.commands import register
from benchmarks.retrieval.longmemeval import ABSTENTION, balanced, iso_date, longmemeval_dataset
from omnimem.embed import FakeEmbedder


def test_session_metrics_rank_sessions_by_their_first_turn():
    session_of = {"a:0": "a", "a:1": "a", "b:0": "b", "c:0": "c"}
    ranked = (("c:0",), ("a:1",), ("a:0",), ("b:0",))
    m = session_metrics(["a:0", "b:0"], ["a", "b"], ranked, session_of)
    assert m["s_any@5"] == 1.0 and m["s_all@5"] == 1.0  # sessions c, a, b
    assert m["t_recall@10"] == 1.0
    ideal = 1 + 1 / 1.5849625007211563  # two relevant turns at ranks 1 and 2
    assert m["t_ndcg@10"] == pytest.approx((1 / 2 + 1 / 2.321928094887362) / ideal)
    none = session_metrics(["a:0"], ["a"], (("c:0",),), session_of)
    assert none["s_any@5"] == 0.0 and none["t_recall@10"] == 0.0 and none["t_ndcg@10"] == 0.0


def test_dates_and_a_balanced_subset():
    assert iso_date("2023/04/10 (Mon) 03:02", "x") == "2023-04-10T03:02"
    records = [{"question_type": t, "n": i} for i, t in enumerate("aaabbc")]
    assert [r["n"] for r in balanced(records, 4)] == [0, 1, 3, 5]  # a, b, c, then a again; file order kept
    assert balanced(records, None) == records


def test_the_disk_cache_is_keyed_by_model_and_text(tmp_path: Path):
    file = tmp_path / "vectors.npz"
    first = CachedEmbedder(FakeEmbedder(dim=8), file)
    vectors = first.embed(["alpha", "beta"])
    first.save()
    again = CachedEmbedder(FakeEmbedder(dim=8), file)
    assert (again.embed(["beta", "alpha"]) == vectors[::-1]).all() and again.embedded == 0  # read, not embedded
    assert cache_key("fake", "alpha") != cache_key("other-model", "alpha")


class _Prefixed(FakeEmbedder):
    """A fake model with roles: a query is embedded as e5 embeds one, after a prefix."""

    roles = "prefix"

    def embed_query(self, texts):
        return self.embed([f"query: {t}" for t in texts])


def test_a_model_with_roles_is_cached_and_searched_with_its_query_vectors():
    base = _Prefixed(dim=8)
    cached = CachedEmbedder(base)
    assert cached.roles == "prefix"  # a store made through the cache records the model's role scheme
    query, passage = cached.embed_query(["alpha"])[0], cached.embed(["alpha"])[0]
    assert (query == base.embed(["query: alpha"])[0]).all() and (passage == base.embed(["alpha"])[0]).all()
    assert cached.embedded == 2  # the query and the passage of one text are two vectors, cached apart
    assert (CachedEmbedder(FakeEmbedder(dim=8)).embed_query(["alpha"]) == FakeEmbedder(dim=8).embed(["alpha"])).all()


def test_real_questions_load_with_their_haystack_under_their_own_user(data_dir: Path):
    folder = data_dir / "longmemeval"
    if not (folder / "longmemeval_s_dev.json").exists():
        pytest.skip(f"{folder} holds no LongMemEval-S files")
    dataset = longmemeval_dataset(folder, "dev", limit=2)
    assert len(dataset.conversations) == 2 and dataset.skipped[ABSTENTION] >= 1
    raw = {r["question_id"]: r for r in json.loads((folder / "longmemeval_s_dev.json").read_text(encoding="utf-8"))}
    for conv in dataset.conversations:
        record = raw[conv.sample_id]
        (question,) = conv.questions
        assert question.question == record["question"] and question.category == record["question_type"]
        assert {d.user_id for d in conv.dialogues} == {conv.sample_id}  # one user per question
        texts = conv.turn_texts()
        for turn_id in question.gold:  # evidence = the has_answer turns, whole text
            session_id, index = turn_id.rsplit(":", 1)
            position = record["haystack_session_ids"].index(session_id)
            turn = record["haystack_sessions"][position][int(index)]
            assert turn["has_answer"] and " ".join(turn["content"].split()) in texts[turn_id]
        assert set(question.sessions) == set(record["answer_session_ids"])
        assert {conv.session_of[t] for t in question.gold} <= set(question.sessions)


def test_the_command_runs_every_system_on_one_question(data_dir: Path, tmp_path: Path):
    if not (data_dir / "longmemeval" / "longmemeval_s_dev.json").exists():
        pytest.skip("no LongMemEval-S files")
    app = typer.Typer()
    register(app)
    res = CliRunner().invoke(app, ["longmemeval", "--split", "dev", "--limit", "1", "--embedder", "fake",
                                   "--data-dir", str(data_dir), "--out", str(tmp_path),
                                   "--embed-cache", str(tmp_path / "v.npz")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "longmemeval-retrieval-dev-first1-fake.json").read_text(encoding="utf-8"))
    assert set(data["systems"]) == {"naive-dense", "naive-bm25", "plain-fusion", "omnimem"}
    assert data["command"] == "python -m benchmarks longmemeval --split dev --limit 1 --embedder fake"
    overall = data["systems"]["omnimem"]["overall"]
    for key in ("1k", "6k", "s_any@5", "s_any@10", "s_all@5", "s_all@10", "t_recall@10", "t_ndcg@10"):
        assert 0.0 <= overall[key] <= 1.0
    assert overall["over_1k"] == 0 and overall["over_6k"] == 0  # no context over its budget
    assert Counter(data["ingest"]["default"])["ingest_ms"] > 0
