"""The duplicate rule on PostgreSQL, checked inside the add's transaction: what is skipped and what is not."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import psycopg
import pytest

from omnimem import Memory
from omnimem.errors import StoreError
from omnimem.results.entities import Entity, EntityType
from omnimem.llm.base import Message
from omnimem.llm.fake import FakeLLM
from omnimem.mau import Links, Scope
from omnimem.store.audit import AuditEvent
from omnimem.store.base import GraphRows
from omnimem.store.jobs import NewJob
from omnimem.store.postgres.store import PostgresStore
from tests.postgres.test_pg_concurrency import CLEAN, residue
from tests.store.test_unit_store import unit

ANN = Scope("ann", None, "s1")


def _store(url: str) -> PostgresStore:
    store = PostgresStore(url)
    store.init_meta("fake", 4)
    return store


def test_content_stored_already_is_skipped_with_its_rows_jobs_and_log_entry(pg_url: str) -> None:
    store = _store(pg_url)
    first = unit("first", ANN)
    store.insert([first], {})
    again = replace(unit("again", ANN), content_hash=first.content_hash)  # what a second process would add

    def graph(rows: GraphRows) -> None:  # the rows an add derives for its units, in its transaction
        rows.upsert_entity(Entity("e-again", "Lisbon", (), EntityType.LOCATION, 0.9, ANN))
        rows.link_entity_unit("e-again", "again", 0.9)

    event = AuditEvent("add", "test", ("again",), ANN)
    jobs = [NewJob("enrich", "enrich:again", {"unit": "again"})]
    assert store.insert([again], {}, derived=[graph], event=event, jobs=jobs) == []
    assert store.get(["again"]) == [] and store.jobs() == []
    with store.graph_rows() as rows:
        assert rows.entities(user_id="ann") == []  # the skipped unit's graph rows went with it
    assert [e.unit_ids for e in store.events()] == []  # nothing was added, so nothing is logged
    assert store.stats()["units"] == 1
    store.close()
    assert residue(pg_url) == CLEAN


def test_the_second_of_one_content_in_a_batch_is_skipped_and_a_chain_links_to_the_holder(pg_url: str) -> None:
    store = _store(pg_url)
    a = unit("a", ANN)
    twin = replace(unit("twin", ANN), content_hash=a.content_hash)
    after = replace(unit("after", ANN), links=Links("twin", None, ()))  # chained to the skipped one
    rows = store.insert([a, twin, after], {})
    assert [u.id for _, u in rows] == ["a", "after"]
    assert store.get(["after"])[0].links.prev_id == "a"  # the unit holding the content it followed
    store.close()
    assert residue(pg_url) == CLEAN


def test_a_version_superseding_its_original_is_no_duplicate_of_it_and_the_same_id_again_fails(pg_url: str) -> None:
    store = _store(pg_url)
    original = unit("orig", ANN)
    store.insert([original], {})
    version = replace(unit("v2", ANN), content_hash=original.content_hash)  # enrichment keeps the hash
    assert [u.id for _, u in store.insert([version], {}, supersedes={"v2": ["orig"]})] == ["v2"]
    assert store.get(["orig"])[0].superseded_by == "v2"
    with pytest.raises(StoreError, match="duplicate key"):  # the same id with other content fails, as on SQLite
        store.insert([replace(unit("orig", ANN), content_hash="other")], {})
    assert store.insert([unit("orig", ANN)], {}) == []  # the same unit again: skipped as a duplicate of itself
    assert store.stats()["units"] == 2
    store.close()


def _model(messages: Sequence[Message]) -> str:
    return json.dumps({"summary": "Quarterly planning: hiring, office lease, product roadmap."})


def test_enrichment_on_postgresql_stores_its_version_and_the_same_text_again_is_a_duplicate(pg_url: str) -> None:
    long = "The quarterly planning meeting covered hiring, the new office lease and the product roadmap. " * 12
    with Memory(url=pg_url, embedder="fake", llm=FakeLLM(_model)) as mem:
        first = mem.add(long, user_id="u", source_id="mail-1")
        assert mem.flush(timeout=60)
        enriched = mem.search("quarterly planning", user_id="u").hits[0].unit
        assert enriched.metadata["enriched_from"] == first.id and mem.get(first.id).superseded_by == enriched.id
        again = mem.add(long, user_id="u", source_id="mail-1")
        assert (again.accepted, again.reason) == (False, "duplicate")
        assert mem.stats()["units"] == 2
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM units").fetchone()[0] == 2
