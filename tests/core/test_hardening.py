"""Hostile and careless input: each gets a typed OmnimemError (or works), never a raw Python exception.

Each test names the defect it guards (issue 15); the store stays usable after every refusal.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnimem import ConfigError, InvalidInputError, Memory, ReadOnlyStoreError, Settings, StoreError
from omnimem.cli.commands import app
from omnimem.engine.ingest.summarise import TOKENS_PER_WORD, first_tokens, first_words
from omnimem.tokens import count_tokens


@pytest.fixture
def seeded(store_path: Path):
    with Memory(store_path, embedder="fake") as m:
        uid = m.add("the original memory about a kayak trip", user_id="u").id
        yield m, uid


# -- typed errors for wrong arguments ----------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {"user_id": "ann\ud800"}, {"agent_id": "\udfff"}, {"session_id": "s\ud834"}, {"source_id": "src\ud800"},
    {"metadata": {"tags": {1, 2}}}, {"metadata": ["not", "a", "mapping"]}, {"metadata": {"x": float("nan")}},
    {"metadata": {(1, 2): "tuple key"}}, {"metadata": {"bad": "\ud800"}},
])
def test_add_refuses_unstorable_ids_and_metadata(seeded, kwargs):
    m, uid = seeded
    with pytest.raises(InvalidInputError):
        m.add("a note about lanterns", **kwargs)
    assert m.stats()["units"] == 1 and m.get(uid).summary.startswith("the original")


def test_self_referencing_metadata_is_refused(seeded):
    m, _ = seeded
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(InvalidInputError):
        m.add("a note", metadata=loop)


@pytest.mark.parametrize("text", ["\x00\x00\x00", "\u200b\u200c\u200d\ufeff", "\x01\x02\x1f", "\u2060 \u00ad"])
def test_invisible_text_is_refused_as_empty(seeded, text):
    m, _ = seeded
    with pytest.raises(InvalidInputError, match="empty"):
        m.add(text)
    assert m.stats()["units"] == 1


@pytest.mark.parametrize("kwargs", [
    {"top_k": "5"}, {"budget": "100"}, {"theta": "x"}, {"top_k": float("nan")}, {"top_k": True},
    {"theta": float("inf")}, {"theta": 2.0}, {"budget": 0}, {"top_k": 10**30 * 1.0},
])
def test_search_refuses_wrong_types_and_non_finite_numbers(seeded, kwargs):
    m, _ = seeded
    with pytest.raises(InvalidInputError):
        m.search("kayak", **kwargs)
    assert m.search("kayak", top_k=5, budget=100, theta=0.1).hits


@pytest.mark.parametrize("call", ["get", "delete", "history", "update"])
@pytest.mark.parametrize("value", [["some-id"], None, 7, b"id"])
def test_methods_by_id_refuse_what_is_not_one_id(seeded, call, value):
    m, uid = seeded
    with pytest.raises(InvalidInputError):
        getattr(m, call)(value)
    assert m.get(uid).id == uid


@pytest.mark.parametrize("path", ["a\x00b", 123, b"/tmp/x", 4.5, ""])
def test_memory_refuses_a_path_that_is_not_a_folder_name(path):
    with pytest.raises(InvalidInputError):
        Memory(path, embedder="fake")


def test_scope_ids_are_nfc_normalised_everywhere(store_path: Path):
    nfc, nfd = unicodedata.normalize("NFC", "Ánna"), unicodedata.normalize("NFD", "Ánna")
    assert nfc != nfd
    with Memory(store_path, embedder="fake") as m:
        uid = m.add("Ánna booked a ski trip for March", user_id=nfc).id
        m.add("Ánna prefers the window seat", user_id=nfd)
        assert m.get(uid).user_id == nfc
        assert {h.unit.user_id for h in m.search("ski trip", user_id=nfd).hits} == {nfc}
        assert len(m.export(user_id=nfd).__next__()) > 0
        assert m.forget(user_id=nfd) == 2  # one user, however the name was typed
        assert m.stats()["units"] == 0


def test_query_length_is_limited(seeded):
    m, _ = seeded
    with pytest.raises(InvalidInputError, match="max_query_chars"):
        m.search("kayak " * 4000)  # 24,000 characters, default limit 20,000
    with Memory(embedder="fake", max_query_chars=10) as small:
        with pytest.raises(InvalidInputError):
            small.search("eleven char")
        small.search("ten chars!")


# -- settings and config files -------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"\xff\xfe top_k = 3\n", b"novelty_treshold = 0.5\n", b"top_k = 3\nbudgett = 9\n"])
def test_bad_config_files_are_config_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes):
    path = tmp_path / "config.toml"
    path.write_bytes(content)
    monkeypatch.setenv("OMNIMEM_CONFIG", str(path))
    with pytest.raises(ConfigError):
        Memory(embedder="fake")


def test_unknown_config_key_is_named(tmp_path: Path):
    path = tmp_path / "config.toml"
    path.write_text("top_k = 3\nbudgett = 9\n[llm]\nmodel = 'x'\n")
    with pytest.raises(ConfigError, match="budgett"):
        Settings.load(config_file=path)


@pytest.mark.parametrize("target", ["dir", "/dev/zero"])
def test_config_that_is_a_folder_or_endless_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str):
    if target == "/dev/zero" and not Path(target).exists():
        pytest.skip("no /dev/zero here")
    monkeypatch.setenv("OMNIMEM_CONFIG", str(tmp_path) if target == "dir" else target)
    with pytest.raises(ConfigError):
        Memory(embedder="fake")


@pytest.mark.parametrize("name, value", [("TIMEOUT", "-1"), ("MAX_RETRIES", "-2"), ("TIMEOUT", "nan"),
                                         ("CONCURRENCY", "0")])
def test_negative_llm_timeouts_and_retries_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str):
    monkeypatch.setenv(f"OMNIMEM_LLM_{name}", value)
    with pytest.raises(ConfigError, match=name.lower()):
        Memory(embedder="fake")


def test_new_limits_are_settings_and_validated(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OMNIMEM_MAX_MEDIA_PIXELS", "1000")
    assert Settings.load(max_query_chars=5).max_media_pixels == 1000
    with pytest.raises(ConfigError):
        Settings.load(max_media_seconds=float("nan"))
    with pytest.raises(ConfigError):
        Settings.load(max_query_chars=0)


# -- summaries by tokens ---------------------------------------------------------------------------------


def test_text_without_spaces_is_summarised_and_found_within_budget():
    chinese = ("我们周末去湖边划皮划艇然后在灯塔附近野餐" * 2000)[:40_000]
    with Memory(embedder="fake") as m:
        uid = m.add(chinese, user_id="u").id
        unit = m.get(uid)
        assert unit.summary != chinese and unit.raw_ref is not None  # full text in the cold tier
        assert count_tokens(unit.summary) <= TOKENS_PER_WORD * m.settings.summary_words + 1
        ctx = m.search("湖边划皮划艇", user_id="u", budget=500)
        assert [h.unit.id for h in ctx.hits] == [uid] and ctx.tokens <= 500


def test_token_cut_leaves_english_word_summaries_unchanged():
    english = " ".join(f"word{i}" for i in range(100))
    assert first_words(english, 60) == " ".join(english.split()[:60]) + " …"
    assert first_words("short text", 60) == "short text"
    assert count_tokens(first_tokens("x" * 10_000, 7)) <= 7


# -- read-only stores ------------------------------------------------------------------------------------


def _snapshot(path: Path) -> dict[str, str]:
    """Every file's hash; SQLite's shared-memory index and an empty WAL (a reader may create them) do not count."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*"))
            if p.is_file() and not p.name.endswith("-shm") and not (p.name.endswith("-wal") and not p.stat().st_size)}


def _make_store(path: Path) -> str:
    with Memory(path, embedder="fake") as m:
        m.add("ownerann planned a kayak trip on the lake", user_id="ann")
        return m.add("a long story " * 60 + "about the lighthouse", user_id="ann").id or ""


def test_read_only_store_serves_reads_and_refuses_writes(tmp_path: Path):
    path = tmp_path / "mem"
    long_id = _make_store(path)
    before = _snapshot(path)
    with Memory(path, read_only=True) as m:
        assert m.read_only
        assert m.search("kayak lake", user_id="ann").hits
        assert m.get(long_id).raw_ref is not None
        assert m.stats()["units"] == 2
        assert len([r for r in m.export(all=True) if r.get("kind") == "unit"]) == 2
        for write in (lambda: m.add("new note", user_id="ann"), lambda: m.delete(long_id),
                      lambda: m.forget(user_id="ann"), lambda: m.update(long_id, text="changed")):
            with pytest.raises(ReadOnlyStoreError):
                write()
    assert _snapshot(path) == before


def test_read_only_needs_an_existing_store(tmp_path: Path):
    with pytest.raises(StoreError):
        Memory(tmp_path / "nothing-here", read_only=True)


def test_store_on_a_read_only_file_system_opens_read_only(tmp_path: Path):
    """A real read-only mount (a user and mount namespace: works as root and as a user)."""
    if not shutil.which("unshare"):
        pytest.skip("needs unshare(1) for a read-only bind mount")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are not available here: {probe.stderr.decode().strip()}")
    path = tmp_path / "mem"
    _make_store(path)
    before = _snapshot(path)
    script = (
        "import sys\nfrom omnimem import Memory, ReadOnlyStoreError\n"
        "m = Memory(sys.argv[1])\n"
        "assert m.read_only and m.search('kayak lake', user_id='ann').hits and m.stats()['units'] == 2\n"
        "assert len(list(m.export(all=True))) >= 2\n"
        "try:\n    m.add('x y z', user_id='ann')\nexcept ReadOnlyStoreError:\n    print('refused')\n"
        "m.close()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    res = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'mount --bind -o ro "$1" "$1" && exec "$2" -c "$3" "$1"', "sh", str(path),
         sys.executable, script], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "refused", res.stderr[-2000:]
    assert _snapshot(path) == before


def test_unwritable_cold_or_index_is_a_typed_error_before_anything_commits(tmp_path: Path):
    path = tmp_path / "mem"
    _make_store(path)
    shutil.rmtree(path / "cold")
    (path / "cold").write_text("not a folder")  # stands for a part that cannot be written (we may run as root)
    with pytest.raises(StoreError, match="cold"):
        Memory(path)


def test_cli_store_under_an_unwritable_parent_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OMNIMEM_EMBEDDER", "fake")
    parent = tmp_path / "a-file"
    parent.write_text("x")
    for store in (parent / "store", Path("/proc/omnimem-store")):
        res = CliRunner().invoke(app, ["add", "hello", "--store", str(store)])
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert res.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error: "), res.stderr


def test_index_files_that_cannot_be_written_at_close_are_a_store_error(tmp_path: Path):
    path = tmp_path / "mem"
    m = Memory(path, embedder="fake")
    m.add("a note about the harbor", user_id="u")
    shutil.rmtree(path / "index", ignore_errors=True)
    (path / "index").write_text("not a folder any more")
    with pytest.raises(StoreError, match="index"):
        m.close()
    (path / "index").unlink()
    with Memory(path) as again:  # the hot tier is the truth: indexes are rebuilt
        assert again.search("harbor", user_id="u").hits
