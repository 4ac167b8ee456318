"""redact_pii: personal data is replaced by typed placeholders before anything is stored, on every engine.

With the setting on, an add, a dialogue, an update, metadata and an import keep
no trace of the original values: not in the hot tier, the cold tier's full
text, the indexes' files, PostgreSQL's tables, the graph, the audit log or an
export; the placeholders are searchable. Off (the default) nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.config import Settings
from omnimem.engine.ingest.redact import find, iban_valid, luhn, redact

EMAIL, PHONE, CARD = "maria.kowalski@example.org", "+44 20 7946 0958", "4111 1111 1111 1111"
IBAN, ADDRESS, NAME = "GB82 WEST 1234 5698 7654 32", "42 Baker Street", "Maria Kowalski"
ACCOUNT = "73920184"
SECRETS = [EMAIL, PHONE, CARD, IBAN, ADDRESS, NAME, ACCOUNT, "Kowalski", "7946 0958", "98765432"]
LONG = (f"Notes from the call with {NAME}. Her email is {EMAIL} and her phone is {PHONE}. "
        f"She moved to {ADDRESS}, London NW1 6XE. Refunds go to IBAN {IBAN}, card {CARD}, "
        f"account number {ACCOUNT}. " + "The rest of the call was about the garden and the new shed. " * 25)


def test_each_kind_becomes_its_placeholder() -> None:
    assert redact(f"Write to {EMAIL} or call {PHONE}.") == "Write to <EMAIL> or call <PHONE>."
    assert redact(f"Card {CARD}, IBAN {IBAN}.") == "Card <CARD>, IBAN <IBAN>."
    assert redact(f"Account number {ACCOUNT}, sort code 20-00-00.") == "Account number <ACCOUNT>, sort code <ACCOUNT>."
    assert redact("We live at 42 Baker Street, London NW1 6XE now.") == "We live at <ADDRESS> now."
    assert redact(f"I met {NAME} yesterday; Maria says hi.") == "I met <PERSON> yesterday; <PERSON> says hi."
    assert [f.kind for f in find(f"{NAME}: {EMAIL}")] == ["PERSON", "EMAIL"]


def test_numbers_that_are_not_personal_data_stay() -> None:
    text = "On 2023-05-07 at 10:30 I paid $1,250.00 for order 1234 5678 9012 3456, version 3.11.4, in 2019."
    assert redact(text) == text  # the order number fails the Luhn check; dates, times and prices are not phones
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    assert iban_valid(IBAN) and not iban_valid("GB83 WEST 1234 5698 7654 32")
    assert redact("Hi <PERSON>, your <EMAIL> is ok") == "Hi <PERSON>, your <EMAIL> is ok"  # redacting twice changes nothing


def test_redaction_is_off_by_default_and_then_changes_nothing(tmp_path: Path) -> None:
    assert Settings().redact_pii is False
    with Memory(tmp_path / "plain", embedder="fake") as m:
        m.add(LONG, user_id="u")
        exported = [r for r in m.export(user_id="u") if r["kind"] == "unit"]
        assert exported[0]["text"] == LONG.strip()
        assert EMAIL in m.search("email", user_id="u").render()


def _everything_stored(m: Memory, tmp_path: Path, pg_url: str | None) -> str:
    """Every byte the store holds that can hold text: the store folder's files, or PostgreSQL's tables."""
    if pg_url is not None:
        import psycopg

        with psycopg.connect(pg_url) as conn:
            tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            return "\n".join(str(row[0]) for table in tables
                             for row in conn.execute(f'SELECT t::text FROM "{table}" t'))  # noqa: S608
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file())


def _write_everything(m: Memory) -> str:
    first = m.add(LONG, user_id="u", session_id="s1", metadata={"note": f"from {EMAIL}", "tags": [PHONE]})
    assert first.accepted
    m.add_dialogue([{"text": f"Hi, I'm {NAME}, reach me at {EMAIL}.", "speaker": "user"},
                    {"text": f"Noted, I will call {PHONE} tomorrow.", "speaker": "assistant"}],
                   user_id="u", session_id="s2")
    short = m.add(f"Pay from card {CARD} please.", user_id="u", session_id="s3")
    m.update(short.id or "", text=f"Pay from IBAN {IBAN} instead, not the card.", user_id="u")
    m.import_records([
        {"kind": "header", "format": "omnimem-export", "version": 1},
        {"kind": "unit", "id": "ab12cd34", "text": f"Imported: {NAME} lives at {ADDRESS}, account number {ACCOUNT}.",
         "user_id": "u", "session_id": "s4", "metadata": {"from": EMAIL}},
    ])
    return first.id or ""


def _assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} found in {where}"


def test_redacted_text_is_nowhere_and_found_by_its_placeholder(
        make_memory: Callable[..., Memory], engine: str, tmp_path: Path) -> None:
    m = make_memory(redact_pii=True, summary_words=20)  # a long text: a summary line and the cold tier's full text
    first = _write_everything(m)
    exported = list(m.export(user_id="u"))
    _assert_no_secret(repr(exported), "the export")
    _assert_no_secret(repr([e.to_dict() for e in m.log(user_id="u")]), "the audit log")
    texts = [r["text"] for r in exported if r["kind"] == "unit"]  # five adds and the updated version
    assert len(texts) == 6 and any("<EMAIL>" in t and "<PHONE>" in t and "<CARD>" in t and "<IBAN>" in t
                                   and "<ADDRESS>" in t and "<PERSON>" in t and "<ACCOUNT>" in t for t in texts)
    for placeholder in ("<EMAIL>", "<PHONE>", "<IBAN>", "<ADDRESS>", "<ACCOUNT>", "<PERSON>"):
        hits = m.search(placeholder, user_id="u", budget=2000)
        assert hits.hits and all(placeholder in h.text for h in hits.hits[:1]), placeholder
        _assert_no_secret(hits.render(), f"the context of {placeholder}")
    assert first in [h.unit.id for h in m.search("<CARD>", user_id="u").hits]
    for secret in (EMAIL, NAME, "Kowalski"):
        _assert_no_secret(m.search(secret, user_id="u").render(), f"a search for {secret}")
    m.close()
    backend = getattr(m, "backend", m)
    _assert_no_secret(_everything_stored(backend, tmp_path, backend.url if engine == "postgresql" else None),
                      f"the {engine} store")


def test_the_graph_holds_placeholders_only(tmp_path: Path) -> None:
    pytest.importorskip("spacy")
    with Memory(tmp_path / "g", embedder="fake", redact_pii=True, graph=True, enrich="sync") as m:
        _write_everything(m)
        graph = m.export_graph(user_id="u")
        _assert_no_secret(graph, "the graph")
        assert "shed" in graph  # the graph was built, from the redacted text
    _assert_no_secret(_everything_stored(m, tmp_path, None), "the store with its graph")


def test_an_older_store_is_redacted_by_exporting_forgetting_and_importing(tmp_path: Path) -> None:
    with Memory(tmp_path / "old", embedder="fake") as m:
        m.add(f"Call {NAME} on {PHONE} about the shed.", user_id="ann")
        dump = list(m.export(user_id="ann"))
        m.forget(user_id="ann")
    with Memory(tmp_path / "old", embedder="fake", redact_pii=True) as m:
        assert m.import_records(dump, allow_forgotten=True)["stored"] == 1
        assert [r["text"] for r in m.export(user_id="ann") if r["kind"] == "unit"] == [
            "Call <PERSON> on <PHONE> about the shed."]
    _assert_no_secret(_everything_stored(m, tmp_path, None), "the store after the import")


def test_without_the_graph_extra_an_add_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from omnimem.engine.ingest import redact as module
    from omnimem.errors import MissingDependencyError

    monkeypatch.setattr(module, "_PIPELINE", [])  # not loaded yet in this process
    monkeypatch.setitem(sys.modules, "spacy", None)  # and not installed
    with Memory(embedder="fake", redact_pii=True) as m:
        with pytest.raises(MissingDependencyError, match=r"omnimem\[graph\]"):
            m.add(f"Write to {EMAIL}.", user_id="u")
        assert [r for r in m.export(user_id="u") if r["kind"] == "unit"] == []  # nothing stored unredacted


def test_a_name_found_in_one_turn_is_redacted_in_the_other_turns_of_the_dialogue() -> None:
    assert redact("thanks Maria!") == "thanks Maria!"  # alone, the small model misses this one
    with Memory(embedder="fake", redact_pii=True) as m:
        m.add_dialogue([{"text": f"Hello, my name is {NAME}.", "speaker": "user"},
                        {"text": "thanks Maria!", "speaker": "assistant"}], user_id="u")
        assert [u.summary for u in m.units(user_id="u")] == ["Hello, my name is <PERSON>.", "thanks <PERSON>!"]
