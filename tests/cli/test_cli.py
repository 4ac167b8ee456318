"""The CLI through typer's runner, on a real store folder."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_conversation.jsonl"


def test_ingest_jsonl_then_search_json(run, store_path: Path):
    res = run("ingest", "jsonl", SAMPLE, "--store", store_path)
    assert res.exit_code == 0, res.output
    assert "22 turns: 22 stored" in res.output
    res = run("search", "lighthouse watercolour", "--store", store_path, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    top = data["hits"][0]
    assert "lighthouse" in top["unit"]["summary"]
    assert top["unit"]["speaker"] == "Alex" and top["unit"]["event_time"].startswith("2024-03-02")
    assert top["unit"]["source_ids"] == ["D1:5"]
    assert data["tokens"] <= data["budget"]


def test_search_table_shows_time_speaker_and_score(run, store_path: Path):
    run("ingest", "jsonl", SAMPLE, "--store", store_path)
    res = run("search", "Biscuit the dog", "--store", store_path, "--user-id", "alex-and-sam")
    assert res.exit_code == 0
    assert "Sam" in res.output and "2024-03-02" in res.output and "Biscuit" in res.output


def test_reingest_skips_everything(run, store_path: Path):
    run("ingest", "jsonl", SAMPLE, "--store", store_path)
    res = run("ingest", "jsonl", SAMPLE, "--store", store_path, "--json")
    assert json.loads(res.stdout)["stored"] == 0


def test_add_get_delete_forget_stats(run, store_path: Path):
    res = run("add", "I bought a red kayak", "--store", store_path, "--user-id", "u1", "--speaker", "Ann", "--time", "2024-06-01")
    assert res.exit_code == 0
    uid = res.stdout.strip()
    got = json.loads(run("get", uid, "--store", store_path, "--json").stdout)
    assert got["summary"] == "I bought a red kayak" and got["user_id"] == "u1"
    run("add", "another note", "--store", store_path, "--user-id", "u2")
    assert run("delete", uid, "--store", store_path).exit_code == 0
    assert json.loads(run("stats", "--store", store_path, "--json").stdout)["units"] == 1
    res = run("forget", "--user-id", "u2", "--store", store_path)
    assert res.exit_code == 0 and "forgot 1" in res.output
    assert json.loads(run("stats", "--store", store_path, "--json").stdout)["units"] == 0


def test_errors_are_one_line_and_non_zero(run, store_path: Path, tmp_path: Path):
    run("add", "seed", "--store", store_path)
    cases = [
        ("get", "missing-id", "--store", store_path),
        ("delete", "missing-id", "--store", store_path),
        ("add", "   ", "--store", store_path),
        ("add", "x", "--time", "someday", "--store", store_path),
        ("forget", "--store", store_path),
        ("ingest", "csv", SAMPLE, "--store", store_path),
        ("ingest", "locomo", tmp_path / "missing.json", "--store", store_path),
        ("search", "x", "--store", tmp_path),  # tmp_path holds other files: not a store
    ]
    for args in cases:
        res = run(*args)
        assert res.exit_code != 0, args
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, res.stderr)
    assert json.loads(run("stats", "--store", store_path, "--json").stdout)["units"] == 1


def test_bad_jsonl_line_is_named(run, store_path: Path, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\nnot json\n')
    res = run("ingest", "jsonl", bad, "--store", store_path)
    assert res.exit_code != 0 and "bad.jsonl:2" in res.stderr


READ_ONLY = [
    ("search", "x"), ("ask", "x?"), ("get", "some-id"), ("stats",), ("export", "--all"), ("history", "some-id"),
    ("log",), ("graph", "show", "Mel"), ("graph", "export"),
    ("delete", "some-id"), ("update", "some-id", "--text", "y"), ("forget", "--all"), ("reembed", "--embedder", "fake"),
]


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: " ".join(a[:2]))
def test_commands_on_a_path_without_a_store_fail_and_create_nothing(run, tmp_path: Path, args: tuple[str, ...]):
    typo = tmp_path / "typo" / "path"
    res = run(*args, "--store", typo)
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "holds no omnimem store" in lines[0], res.stderr
    assert not (tmp_path / "typo").exists()


def test_read_only_command_on_an_empty_folder_fails(run, tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run("search", "x", "--store", empty)
    assert res.exit_code == 2 and "holds no omnimem store" in res.stderr
    assert list(empty.iterdir()) == []


def test_search_shows_the_ten_best_by_default_then_limit_and_context(run, store_path: Path):
    run("ingest", "jsonl", SAMPLE, "--store", store_path)
    whole = json.loads(run("search", "what happened", "--store", store_path, "--json").stdout)
    assert len(whole["hits"]) > 10  # --json keeps the whole context
    default = run("search", "what happened", "--store", store_path)
    assert default.exit_code == 0, default.output
    assert f"10 of {len(whole['hits'])} memories" in default.output
    three = run("search", "what happened", "--store", store_path, "--limit", "3").output
    assert f"3 of {len(whole['hits'])} memories" in three and len(three) < len(default.output)
    assert run("search", "x", "--store", store_path, "--limit", "0").exit_code == 2
    packed = run("search", "lighthouse watercolour", "--store", store_path, "--context")
    assert packed.exit_code == 0 and "lighthouse" in packed.stdout
    assert "memories in context" not in packed.stdout and "│" not in packed.stdout  # the text, not a table


def test_bench_is_a_thin_entry_point_to_the_benchmarks_package(run):
    res = run("bench", "--help")
    assert res.exit_code == 0, res.output
    assert "locomo" in res.output and "perf" in res.output and "media" in res.output


def test_bench_without_the_benchmarks_package_is_one_error_line(run, monkeypatch: pytest.MonkeyPatch):
    import omnimem.cli.commands

    monkeypatch.setattr(omnimem.cli.commands, "_benchmark_package", lambda: None)
    res = run("bench", "locomo", "--retrieval")
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "python -m benchmarks" in lines[0]


def test_hits_carry_their_fused_score_and_ranks_so_the_order_is_visibly_sorted(run, store_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OMNIMEM_RANKING", "rules")  # the fused score orders (the learnt ranking re-orders by its own)
    run("ingest", "jsonl", SAMPLE, "--store", store_path)
    data = json.loads(run("search", "painting the lighthouse", "--store", store_path, "--json").stdout)
    hits = sorted(data["hits"], key=lambda h: h["rank"])
    fused = [h["fused"] for h in hits]
    assert fused == sorted(fused, reverse=True) and all(f > 0 for f in fused)
    weights = {"dense": 1.0, "sparse": 1.0, "session": 0.5}  # the defaults: the session signal is one more list
    for hit in hits:  # each retriever that found a hit gives its rank; the fused score is their weighted RRF sum
        assert set(hit["ranks"]) - {"session"} == set(hit["sources"]) & {"dense", "sparse"}
        assert "session" in hit["ranks"]  # every hit's session is ranked (the sample is one session)
        assert hit["fused"] == pytest.approx(sum(weights[name] / (60 + r) for name, r in hit["ranks"].items()))
    table = run("search", "painting the lighthouse", "--store", store_path, "--limit", "3").output
    assert "fused d/b" in table and f"{fused[0]:.5f}" in table
