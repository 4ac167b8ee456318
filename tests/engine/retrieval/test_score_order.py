"""One score order on every surface: what ranked a hit is its first number, the similarity its second.

``Context.ranked_by`` (HTTP ``ranked_by``) says which number ordered the hits:
``"fused"`` where the fused scores fall in rank order, ``"rank"`` where they
do not (a unit moved up, neighbours, a planner's merged queries). The CLI
table, the HTTP JSON and the integrations' metadata show that number first;
the cosine similarity (``score``, now also ``similarity``) comes second and
need not fall in rank order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from omnimem import Memory
from omnimem.integrations import hit_metadata
from tests.serving import LiveServer

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "sample_conversation.jsonl"
USER = "alex-and-sam"
QUERY = "What did Alex paint?"
NO_SIGNALS = {"session_weight": 0.0, "speaker_weight": 0.0, "time_weight": 0.0}  # the fused score alone orders
RULES = {"ranking": "rules"}  # the learnt ranking (the default) re-orders the head by its own score


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    from omnimem.contract.loaders import load_jsonl

    with Memory(tmp_path_factory.mktemp("order") / "store", embedder="fake", **NO_SIGNALS, **RULES) as mem:
        for dialogue in load_jsonl(SAMPLE):
            mem.add_dialogue(dialogue.turns, user_id=dialogue.user_id, session_id=dialogue.session_id)
        yield mem


def in_rank_order(hits: list[dict]) -> list[dict]:
    return sorted(hits, key=lambda h: h["rank"])


def test_the_http_json_says_what_ranked_the_hits_and_that_number_falls_in_rank_order(memory: Memory) -> None:
    server = LiveServer(memory, auth=False, rate_limit=None)
    try:
        data = httpx.post(f"{server.url}/v1/search", json={"query": QUERY, "user_id": USER}).json()
    finally:
        server.stop()
    hits = in_rank_order(data["hits"])
    assert data["ranked_by"] == "fused" and len(hits) >= 5
    fused = [h["fused"] for h in hits]
    assert fused == sorted(fused, reverse=True)
    assert all(h["similarity"] == h["score"] for h in hits)  # the cosine, by its name; ``score`` is kept
    cosines = [h["similarity"] for h in hits]
    assert cosines != sorted(cosines, reverse=True)  # why it is shown second: it does not give the order


def test_the_integrations_metadata_carries_the_same_numbers(memory: Memory) -> None:
    ctx = memory.search(QUERY, user_id=USER)
    meta = [hit_metadata(h) for h in sorted(ctx.hits, key=lambda h: h.rank)]
    assert [m["rank"] for m in meta] == list(range(1, len(meta) + 1))
    fused = [m["fused"] for m in meta]
    assert fused == sorted(fused, reverse=True) and None not in fused
    wire = in_rank_order(ctx.to_dict()["hits"])
    assert fused == [h["fused"] for h in wire] and [m["similarity"] for m in meta] == [h["score"] for h in wire]


def test_an_order_the_fused_score_does_not_give_is_ranked_by_rank(memory: Memory) -> None:
    from omnimem.results import primary_score, ranked_by

    ctx = memory.search(QUERY, user_id=USER)
    hits = sorted(ctx.hits, key=lambda h: h.rank)
    assert ranked_by(hits) == "fused"
    assert primary_score(hits[0], "fused") == f"{hits[0].fused:.5f}"
    neighbour = [*hits[:2], replace(hits[2], fused=None), *hits[3:]]  # a unit no ranked retriever found
    moved_up = [hits[0], replace(hits[1], fused=hits[2].fused), replace(hits[2], fused=hits[1].fused), *hits[3:]]
    for order in (neighbour, moved_up):
        assert ranked_by(order) == "rank"
        assert [primary_score(h, "rank") for h in order] == [f"#{i}" for i in range(1, len(order) + 1)]
    planned = memory.search(QUERY, user_id=USER, planner="offline")  # the question and its rewrites, merged
    assert sum(len(r.queries) for r in planned.plan.rounds) > 1 and planned.to_dict()["ranked_by"] == "rank"


def cli(*args: str | Path, columns: int = 80, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``omnimem`` command, run as a user runs it, in a terminal ``columns`` wide."""
    environ = {**os.environ, "OMNIMEM_EMBEDDER": "fake", "COLUMNS": str(columns), **env}
    return subprocess.run([sys.executable, "-m", "omnimem.cli", *map(str, args)], capture_output=True, text=True,
                          env=environ, timeout=120, check=False)


@pytest.fixture(scope="module")
def cli_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("cli") / "mem"
    done = cli("ingest", "jsonl", SAMPLE, "--store", store)
    assert done.returncode == 0, done.stderr
    return store


def table_rows(output: str) -> tuple[list[str], int, list[list[str]]]:
    """The table's header cells, where its memory column starts, and each row's lines."""
    lines = output.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("#"))
    rows: list[list[str]] = []
    for line in lines[head + 2:]:
        if line[:1].isdigit():
            rows.append([line])
        elif line.startswith(" ") and rows:
            rows[-1].append(line)
        else:
            break
    return lines[head].split(), lines[head].index("memory"), rows


def test_the_cli_table_shows_the_fused_score_first_falling_in_rank_order(cli_store: Path) -> None:
    out = cli("search", QUERY, "--store", cli_store, **{f"OMNIMEM_{k.upper()}": "0" for k in NO_SIGNALS},
              OMNIMEM_RANKING="rules")
    assert out.returncode == 0, out.stderr
    header, _, rows = table_rows(out.stdout)
    assert header[:5] == ["#", "fused", "d/b", "cos", "lvl"]
    assert [int(row[0].split()[0]) for row in rows] == list(range(1, len(rows) + 1))
    fused = [float(row[0].split()[1]) for row in rows]
    assert len(fused) == 10 and fused == sorted(fused, reverse=True)
    assert "ranked by the fused score" in out.stdout and "cos: the query's cosine similarity, shown second" in out.stdout
    data = json.loads(cli("search", QUERY, "--store", cli_store, "--json",
                          **{f"OMNIMEM_{k.upper()}": "0" for k in NO_SIGNALS},
                          OMNIMEM_RANKING="rules").stdout)
    assert fused == [round(h["fused"], 5) for h in in_rank_order(data["hits"])[:10]]  # the HTTP JSON's numbers


def test_an_80_column_table_keeps_the_memory_readable(cli_store: Path) -> None:
    out = cli("search", QUERY, "--store", cli_store, "--limit", "3", "--json")
    best = in_rank_order(json.loads(out.stdout)["hits"])[:3]
    out = cli("search", QUERY, "--store", cli_store, "--limit", "3")
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80
    _, start, rows = table_rows(out.stdout)
    for hit, lines in zip(best, rows, strict=True):
        unit = hit["unit"]
        memory = [line[start:].strip() for line in lines]
        # the memory column reads as text: whole words, several to a line, who said it and its source
        assert " ".join(memory) == f"{unit['speaker']}: {unit['summary']} ({','.join(unit['source_ids'])})"
        assert max(len(piece) for piece in memory) >= 28
