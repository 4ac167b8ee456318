"""``omnimem list``: what a store holds, newest first, with scope and time filters and ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import Memory
from omnimem.cli import app


@pytest.fixture
def store(tmp_path: Path) -> str:
    path = tmp_path / "mem"
    with Memory(path, embedder="fake") as mem:
        mem.add("Ann bought a red kayak", user_id="ann", speaker="Ann", time="2024-06-01T10:00")
        mem.add("Ann paddled across the lake", user_id="ann", speaker="Ann", time="2024-06-08T10:00")
        mem.add("Bo planted tomatoes", user_id="bo", speaker="Bo", time="2024-06-05T10:00", session_id="garden")
        mem.add("Bo's tomatoes came up red", user_id="bo", speaker="Bo", time="2024-07-01T10:00", session_id="garden")
    return str(path)


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, [*args], env={"COLUMNS": "200"})
    return res.exit_code, res.output


def test_list_shows_the_newest_memory_first(store: str) -> None:
    code, output = run("list", "--store", store)
    assert code == 0, output
    lines = output.splitlines()
    assert lines[0] == "4 memories in this store, newest first: 1 to 4"
    assert [line.split("] ", 1)[1] for line in lines[1:]] == [
        "Bo: Bo's tomatoes came up red", "Ann: Ann paddled across the lake", "Bo: Bo planted tomatoes",
        "Ann: Ann bought a red kayak"]
    assert "[2024-07-01 10:00]" in lines[1]


def test_list_filters_by_scope_and_time_and_pages_back(store: str) -> None:
    _, ann = run("list", "--user-id", "ann", "--store", store)
    assert ann.splitlines()[0] == "2 memories for user 'ann', newest first: 1 to 2"
    assert "Bo" not in ann
    _, june = run("list", "--since", "2024-06-02", "--until", "2024-07-01", "--store", store)
    assert june.splitlines()[0] == "2 memories in this store matching the filters, newest first: 1 to 2"
    assert "paddled" in june.splitlines()[1] and "planted" in june.splitlines()[2]
    _, garden = run("list", "--user-id", "bo", "--session-id", "garden", "--limit", "1", "--store", store)
    assert garden.splitlines()[0] == ("2 memories for user 'bo', session 'garden', newest first: 1 to 1; "
                                      "--offset 1 for the 1 older")
    _, older = run("list", "--user-id", "bo", "--session-id", "garden", "--limit", "1", "--offset", "1",
                   "--store", store)
    assert older.splitlines()[1].endswith("Bo: Bo planted tomatoes")
    _, nobody = run("list", "--user-id", "cy", "--store", store)
    assert nobody.strip() == "no memories for user 'cy' (`omnimem stats` counts users and sessions)"


def test_list_json_is_the_units_newest_first_and_the_total(store: str) -> None:
    code, output = run("list", "--speaker", "Ann", "--limit", "1", "--json", "--store", store)
    assert code == 0, output
    data = json.loads(output)
    assert data["total"] == 2 and data["offset"] == 0
    assert [u["summary"] for u in data["units"]] == ["Ann paddled across the lake"]
    assert data["units"][0]["user_id"] == "ann" and data["units"][0]["event_time"].startswith("2024-06-08T10:00")


def test_list_refuses_a_missing_store_and_a_bad_filter_in_one_line(store: str, tmp_path: Path) -> None:
    code, output = run("list", "--store", str(tmp_path / "nowhere"))
    assert code == 2 and output.count("\n") == 1 and "holds no omnimem store" in output
    code, output = run("list", "--modality", "smell", "--store", store)
    assert code == 2 and output.strip() == "error: unknown modality 'smell'; use one of text, image, audio, video"
    assert not (tmp_path / "nowhere").exists()
