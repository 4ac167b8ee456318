"""Bad input on PostgreSQL: typed errors that say the fix, and a failed batch leaves nothing half-written."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from omnimem import Memory
from omnimem.errors import ConfigError, EmbedderMismatchError, InvalidInputError, StoreError
from omnimem.mau import Scope
from omnimem.store.base import GraphRows
from omnimem.store.postgres.store import PostgresStore
from tests.postgres_server import PostgresServer
from tests.store.test_unit_store import unit


@pytest.mark.parametrize("url, error, message", [
    ("postgresql://nobody@127.0.0.1:1/mem", StoreError, "cannot connect to PostgreSQL at postgresql://nobody@127"),
    ("postgresql://u:secret@host:notaport/db", ConfigError, "not a valid PostgreSQL URL"),
    ("mysql://u@host/db", ConfigError, "no engine serves"),
    ("postgresql://u@h/db?omnimem_user=", ConfigError, "needs a user id"),
])
def test_a_wrong_url_is_a_typed_error_with_the_fix(url: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        Memory(url=url, embedder="fake")
    assert "secret" not in str(caught.value)  # passwords stay out of messages


def test_path_and_url_together_are_refused(tmp_path: object) -> None:
    with pytest.raises(InvalidInputError, match="not both"):
        Memory(tmp_path, url="postgresql://u@h/db")  # type: ignore[arg-type]


def test_a_database_without_the_vector_extension_says_how_to_get_it(postgres: PostgresServer) -> None:
    url = postgres.fresh(migrated=False)  # no extension yet, and this login may not create one
    postgres.admin("DO $$ BEGIN CREATE ROLE omnimem_plain LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    plain = url.replace("postgresql://postgres:@", "postgresql://omnimem_plain@")
    with pytest.raises(StoreError, match="CREATE EXTENSION vector"):
        Memory(url=plain, embedder="fake")
    with psycopg.connect(url) as conn:  # nothing of the schema was left behind
        assert conn.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"
                            ).fetchone()[0] == 0
    postgres.drop(url)


def test_a_store_made_with_another_embedder_names_the_reembed_command(pg_url: str) -> None:
    Memory(url=pg_url, embedder="fake").close()
    from omnimem.embed import FakeEmbedder, register_embedder

    class Other(FakeEmbedder):
        name = "fake-other"

    register_embedder("fake-other", lambda: Other(dim=64), replace=True)
    with pytest.raises(EmbedderMismatchError, match="omnimem reembed --embedder fake-other --url postgresql://"):
        Memory(url=pg_url, embedder="fake-other")


def test_a_connection_lost_mid_batch_stores_nothing(pg_url: str, postgres: PostgresServer) -> None:
    store = PostgresStore(pg_url)
    store.init_meta("fake", 4)
    store.insert([unit("before", Scope("ann"))], {})

    def cut_the_line(rows: GraphRows) -> None:  # the server drops this connection half-way through the batch
        pid = rows._conn.info.backend_pid  # type: ignore[attr-defined]
        postgres.admin(f"SELECT pg_terminate_backend({pid})")

    batch = [unit(f"u{i}", Scope("ann", None, "s1"), vector=[0.0, 1.0, 0.0, 0.0]) for i in range(50)]
    with pytest.raises(StoreError, match="connection to PostgreSQL was lost.*nothing of it was stored"):
        store.insert(batch, {}, derived=[cut_the_line])
    assert store.get([u.id for u in batch]) == []  # the pool replaced the dead connection
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM terms").fetchone()[0] == \
            conn.execute("SELECT COUNT(*) FROM terms WHERE rid IN (SELECT rid FROM units)").fetchone()[0]
        assert conn.execute("SELECT seq, docs FROM counters").fetchone() == (1, 1)  # the first insert only
    store.insert(batch, {})  # and the same batch goes in afterwards
    assert len(store.get([u.id for u in batch])) == 50
    assert np.allclose(store.get(["u3"])[0].embedding, [0.0, 1.0, 0.0, 0.0])  # type: ignore[arg-type]
    store.close()


def test_reembed_swaps_the_vectors_the_dimension_and_the_hnsw_index(pg_url: str) -> None:
    from omnimem.embed import FakeEmbedder, register_embedder

    class Other(FakeEmbedder):
        name = "fake-other"

    register_embedder("fake-other", lambda: Other(dim=64), replace=True)
    with Memory(url=pg_url, embedder="fake") as m:
        uid = m.add("a blue bicycle with a basket", user_id="u").id
        assert m.reembed("fake-other") == 1
        assert m.search("blue bicycle", user_id="u").hits[0].unit.id == uid
    with Memory(url=pg_url) as m:  # another process opening it later finds the new model recorded
        assert (m.embedder.name, m.embedder.dim) == ("fake-other", 64)
        assert m.search("bicycle basket").hits[0].unit.id == uid
        assert m.log()[-1].action == "reembed"
    with psycopg.connect(pg_url) as conn:
        assert "vector(64)" in conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                                            "WHERE attrelid = 'units'::regclass AND attname = 'embedding'"
                                            ).fetchone()[0]
        assert conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'units_embedding_hnsw'").fetchone()
