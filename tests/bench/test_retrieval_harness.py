"""The offline retrieval benchmark: metrics, evidence matching, budgets, the whole harness, the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmarks.harness.baselines import RawSystem, pack_lines
from benchmarks.harness.evidence import parse_evidence
from benchmarks.harness.retrieval import (
    DANGLING_EVIDENCE,
    DROPPED_DANGLING,
    EMPTY_EVIDENCE,
    MALFORMED_EVIDENCE,
    BenchConversation,
    BenchDataset,
    CachedEmbedder,
    MemorySystem,
    Retrieved,
    from_contexts,
    locomo_dataset,
    memgallery_dialogues,
    recall,
    run,
    score,
    select_questions,
    split,
    visible,
)
from benchmarks.retrieval.commands import register
from omnimem import Memory
from omnimem.embed import FakeEmbedder
from omnimem.contract.loaders import Dialogue
from omnimem.tokens import count_tokens


def test_recall_counts_each_gold_id_once():
    assert recall(["D1:1", "D2:3"], ["D2:3", "D2:3", "D9:9"]) == 0.5
    assert recall(["D1:1"], []) == 0.0
    assert recall([], ["D1:1"]) == 0.0


def test_score_counts_only_evidence_whose_whole_text_is_visible():
    ranked = tuple((f"D1:{i}",) for i in range(1, 31))
    texts = {"D1:3": ("I adopted a grey cat named Pixel",), "D1:8": ("We moved to Lisbon in May",),
             "D1:25": ("My sister plays the cello every evening",)}
    small = "[2023-05-08]\nAnn: My sister plays the cello every\n  evening\nBob: We moved to Lisbon …"  # D1:8 cut
    large = small + "\nAnn: We moved to Lisbon in May\nAnn: I adopted a grey cat named Pixel"
    got = Retrieved(ranked, {1000: frozenset({"D1:8", "D1:25"}), 6000: frozenset(s for r in ranked for s in r)},
                    {1000: small, 6000: large})
    s = score(["D1:3", "D1:8", "D1:25"], got, texts)
    assert s["@5"] == pytest.approx(1 / 3) and s["@10"] == pytest.approx(2 / 3) and s["@20"] == pytest.approx(2 / 3)
    assert s["cand"] == 1.0 and s["6k"] == 1.0
    assert s["1k"] == pytest.approx(1 / 3)  # the cut line of D1:8 is among the hits but not visible
    assert s["hits_1k"] == pytest.approx(2 / 3)  # the old count would have taken it
    assert s["tokens_1k"] == count_tokens(small) and s["over_1k"] == 0.0


def test_a_context_over_its_budget_is_reported():
    page = "word " * 1200
    got = Retrieved((), {1000: frozenset()}, {1000: page, 6000: page})
    s = score(["D1:1"], got, {})
    assert s["over_1k"] == 1.0 and s["over_6k"] == 0.0 and s["tokens_1k"] == count_tokens(page)


def test_visible_folds_whitespace_but_needs_the_whole_text():
    texts = {"a": ("one two three",), "b": ("four five",)}
    assert visible(["a", "b"], "x one\n two   three y four", texts) == ["a"]


def test_select_questions_counts_what_it_skips():
    known = {"D1:1", "D1:2"}
    raw = [
        ("ok", "1", parse_evidence(["D1:1", "D7:7"])),  # one dangling id dropped, QA kept
        ("empty", "2", parse_evidence([])),
        ("malformed", "3", parse_evidence(["D"])),
        ("dangling", "4", parse_evidence(["D9:9"])),
        ("repaired", "4", parse_evidence(["D:1:2"])),
    ]
    skipped: Counter[str] = Counter()
    kept = select_questions(raw, known, skipped)
    assert [(q.question, q.gold) for q in kept] == [("ok", ("D1:1",)), ("repaired", ("D1:2",))]
    assert skipped[EMPTY_EVIDENCE] == 1 and skipped[MALFORMED_EVIDENCE] == 1 and skipped[DANGLING_EVIDENCE] == 1
    assert skipped[DROPPED_DANGLING] == 1


def test_pack_lines_skips_what_does_not_fit_and_keeps_rank_order():
    kept, used = pack_lines([1, 2, 0], [5, 50, 3], budget=10)  # item 1 is skipped, later ones fit (+1 per line break)
    assert kept == [2, 0] and used == 10


def test_evidence_is_matched_through_source_ids_and_budget_limits_hits():
    # embed_context=0: each turn embedded alone, so the fake embedder ranks "topic 7" first
    with Memory(embedder="fake", fusion="union", neighbours=0, embed_context=0) as mem:
        turns = [{"text": f"turn {i} about topic {i} and many other words", "speaker": "Ann",
                  "time": "2024-01-01", "id": f"D1:{i}"} for i in range(1, 41)]
        mem.add_dialogue(turns, user_id="u", session_id="s1")
        contexts = {b: mem.search("topic 7", budget=b, user_id="u") for b in (60, 6000)}
        got = from_contexts(contexts, lambda ids: {i: mem.get(i).source_ids for i in ids})
    assert got.ranked[0] == ("D1:7",)
    assert "D1:7" in got.within[60] and len(got.within[60]) < len(got.within[6000])
    assert count_tokens(got.rendered[60]) <= 60 and len(got.ranked) == contexts[6000].candidates
    assert "turn 7 about topic 7" in got.rendered[60]


def test_memgallery_rounds_become_two_turns_with_captions():
    from benchmarks.harness.datasets import (
        MemGalleryImage,
        MemGalleryProfile,
        MemGalleryRound,
        MemGallerySample,
        MemGallerySession,
    )

    rnd = MemGalleryRound("D1:1", "Look at this", "Nice!", (MemGalleryImage("D1:IMG_001", "x.png", "a red kayak"),))
    sample = MemGallerySample("file", MemGalleryProfile("Julian"), (MemGallerySession("D1", "2024-06-17", (rnd,)),), ())
    [dialogue] = memgallery_dialogues(sample)
    assert dialogue.turns[0] == {"text": "Look at this [shared an image: a red kayak]", "speaker": "Julian",
                                 "time": "2024-06-17", "id": "D1:1"}
    assert dialogue.turns[1]["speaker"] == "assistant" and dialogue.turns[1]["id"] == "D1:1"


def _tiny_dataset() -> BenchDataset:
    facts = ["I adopted a grey cat named Pixel", "My sister lives in Lisbon", "I started learning the cello",
             "We hiked the Matterhorn trail", "I bake sourdough every Sunday", "My favourite film is Alien"]
    turns = [{"text": f, "speaker": "Ann" if i % 2 else "Bob", "time": "2024-03-0%d" % (1 + i // 3),
              "id": f"D{1 + i // 3}:{1 + i % 3}"} for i, f in enumerate(facts)]
    dialogues = [Dialogue(turns[:3], user_id="c1", session_id="session_1"),
                 Dialogue(turns[3:], user_id="c1", session_id="session_2")]
    raw = [("What is the cat called?", "4", parse_evidence(["D1:1"])),
           ("Where does the sister live?", "4", parse_evidence(["D1:2"])),
           ("Which instrument and which bread?", "1", parse_evidence(["D1:3", "D2:2"])),
           ("no evidence", "5", parse_evidence([]))]
    ds = BenchDataset("tiny", {"1": "multi-hop", "4": "single-hop", "5": "adversarial"}, [])
    conv = BenchConversation("c1", dialogues)
    conv.questions = select_questions(raw, conv.turn_ids(), conv.skipped)
    ds.skipped.update(conv.skipped)
    ds.conversations.append(conv)
    return ds


def test_whole_harness_on_a_tiny_dataset():
    ds = _tiny_dataset()
    systems = [RawSystem("naive-dense", "", "dense"), RawSystem("naive-bm25", "", "bm25"),
               RawSystem("plain-fusion", "", "rrf"), MemorySystem("omnimem", ""),
               MemorySystem("no-bm25", "", {"sparse": False}), MemorySystem("paper", "", {"fusion": "union"})]
    cache = CachedEmbedder(FakeEmbedder())
    result = run(ds, systems, cache)
    assert ds.skipped[EMPTY_EVIDENCE] == 1
    by_name = {r.system.name: r.summary(ds.categories) for r in result.systems}
    for name, summary in by_name.items():
        assert summary["count"] == 3 and summary["categories"]["5"]["count"] == 0
        if name != "naive-bm25":  # BM25 ranks only turns sharing a word with the question
            assert summary["overall"]["6k"] == 1.0  # six short turns always fit
        assert summary["overall"]["tokens_6k"] <= 6000 and summary["overall"]["over_6k"] == 0.0
    assert by_name["naive-bm25"]["categories"]["4"]["@5"] == 1.0  # "cat", "sister" are words of the turns
    assert result.ingest["default"]["stored"] == 6
    assert cache.embedded <= 6 * 2 + 3  # each distinct text once: unit texts (= 'speaker: text'), questions


def test_splits_are_halves_and_keep_their_own_skip_counts():
    ds = _tiny_dataset()
    other = BenchConversation("c2", ds.conversations[0].dialogues, [], skipped=Counter({EMPTY_EVIDENCE: 5}))
    ds.conversations.append(other)
    dev, test = split(ds, "dev"), split(ds, "test")
    assert [c.sample_id for c in dev.conversations] == ["c1"] and [c.sample_id for c in test.conversations] == ["c2"]
    assert dev.skipped[EMPTY_EVIDENCE] == 1 and test.skipped[EMPTY_EVIDENCE] == 5
    assert test.split == "test" and len(split(ds, "all").conversations) == 2
    with pytest.raises(ValueError):
        split(ds, "train")


LOCOMO = [{
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I started the cello.",
             "blip_caption": "a photo of a cello"},
        ],
    },
    "qa": [
        {"question": "What is Ann's cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
        {"question": "What does Bob play?", "answer": "cello", "evidence": ["D1:02"], "category": 1},
        {"question": "Who is Carl?", "adversarial_answer": "x", "evidence": [], "category": 5},
    ],
}]


@pytest.fixture
def cli(tmp_path: Path):
    app = typer.Typer()
    register(app)
    (tmp_path / "data" / "locomo").mkdir(parents=True)
    (tmp_path / "data" / "locomo" / "locomo10.json").write_text(json.dumps(LOCOMO), encoding="utf-8")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def test_cli_locomo_retrieval_writes_json_and_readme(cli, tmp_path: Path):
    out = tmp_path / "results"
    res = cli("locomo", "--retrieval", "--data-dir", tmp_path / "data", "--out", out, "--embedder", "fake",
              "--variants", "naive-dense,plain-fusion,omnimem", "--split", "all")
    assert res.exit_code == 0, res.output
    data = json.loads((out / "locomo-retrieval-all-custom-fake.json").read_text())
    assert data["questions"] == 2 and data["skipped"][EMPTY_EVIDENCE] == 1 and data["split"] == "all"
    assert data["command"].startswith("python -m benchmarks locomo --retrieval --split all")
    assert set(data["systems"]) == {"naive-dense", "plain-fusion", "omnimem"}
    assert "anchors" not in data
    assert data["systems"]["omnimem"]["overall"]["6k"] == 1.0
    assert data["machine"]["cores"] and data["versions"]["numpy"]
    # every system's per-question recall is kept, paired across systems, with its bootstrap intervals
    assert [len(data["per_question"][s]["1k"]) for s in data["systems"]] == [2, 2, 2]
    assert data["intervals"]["omnimem"]["6k"] == {"mean": 1.0, "low": 1.0, "high": 1.0}
    assert data["intervals"]["omnimem"]["minus_naive-dense"]["6k"]["mean"] == pytest.approx(
        1.0 - sum(data["per_question"]["naive-dense"]["6k"]) / 2)
    readme = (out / "README.md").read_text()
    assert "| `omnimem` |" in readme and "95% bootstrap intervals over questions" in readme


def test_cli_refuses_qa_without_an_llm_and_unknown_variants(cli, tmp_path: Path, monkeypatch):
    import os

    for var in [v for v in os.environ if v.startswith("OMNIMEM_LLM_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("OMNIMEM_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    res = cli("locomo", "--qa", "--data-dir", tmp_path / "data")
    assert res.exit_code == 2 and "LLM" in res.output and len(res.output.strip().splitlines()) == 1
    res = cli("locomo", "--retrieval", "--variants", "nope", "--data-dir", tmp_path / "data")
    assert res.exit_code == 2 and "unknown variant" in res.output
    res = cli("locomo", "--data-dir", tmp_path / "data")
    assert res.exit_code == 2 and "--retrieval" in res.output


def test_real_locomo_evidence_matches_turns(data_dir: Path):
    ds = locomo_dataset(data_dir / "locomo" / "locomo10.json", limit=1)
    conv = ds.conversations[0]
    assert conv.sample_id == "conv-26" and len(conv.questions) == 197
    ids = conv.turn_ids()
    assert all(g in ids for q in conv.questions for g in q.gold)


def test_memgallery_images_can_be_image_units(tmp_path):
    from benchmarks.harness.datasets import (
        MemGalleryImage,
        MemGalleryProfile,
        MemGalleryRound,
        MemGallerySample,
        MemGallerySession,
    )
    from benchmarks.harness.retrieval import BenchConversation, MemoryPool, memgallery_dialogues, memgallery_images

    rnd = MemGalleryRound("D1:1", "Look at this", "Nice!", (MemGalleryImage("D1:IMG_001", "x.png", "a red kayak"),))
    sample = MemGallerySample("file", MemGalleryProfile("Julian"), (MemGallerySession("D1", "2024-06-17", (rnd,)),), ())
    conv = BenchConversation("file", memgallery_dialogues(sample), [], memgallery_dialogues(sample, inline_captions=False),
                             memgallery_images(sample))
    from omnimem.embed import FakeEmbedder

    pool = MemoryPool(conv, FakeEmbedder())
    mem = pool.get({"image_units": True})
    ctx = mem.search("red kayak", user_id="file")
    hit = ctx.hits[0]
    assert hit.unit.modality.value == "image" and hit.unit.source_ids == ("D1:1",) and hit.unit.summary == "a red kayak"
    assert "(image x.png) a red kayak" in ctx.render()  # the image's name is visible: an answer can give it
    assert "[shared an image" not in " ".join(h.unit.summary for h in mem.search("look", user_id="file").hits)
    pool.close()


def test_questions_with_an_image_search_with_its_caption():
    raw = [("Which day was about the picture?", "VR", parse_evidence(["D1:1"]))]
    [q] = select_questions(raw, {"D1:1"}, Counter(), ["a red kayak on a lake"])
    assert q.query == "Which day was about the picture? [image: a red kayak on a lake]"
    [plain] = select_questions(raw, {"D1:1"}, Counter())
    assert plain.query == plain.question


def test_two_runs_saving_one_vector_cache_at_once_leave_it_whole(tmp_path: Path) -> None:
    import threading

    file = tmp_path / "vectors.npz"
    errors: list[BaseException] = []

    def save_often(tag: str) -> None:
        cache = CachedEmbedder(FakeEmbedder(), file)
        try:
            for i in range(25):
                cache.embed([f"{tag} text {i}"])
                cache.save()
        except BaseException as exc:  # noqa: BLE001 - the test reports any failure of either writer
            errors.append(exc)

    writers = [threading.Thread(target=save_often, args=(tag,)) for tag in ("a", "b")]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.npz"]  # no temporary file left behind
    assert CachedEmbedder(FakeEmbedder(), file)._saved >= 25  # one writer's vectors whole (the later replace wins)
