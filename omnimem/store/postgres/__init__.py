"""The PostgreSQL + pgvector backend (extra ``postgres``): stateless processes sharing one database.

- :mod:`.connect`: URLs, the connection pool, the optional tenant binding;
- :mod:`.schema` and :mod:`.migrate`: named, versioned migrations;
- :mod:`.store`: the ``UnitStore`` contract; :mod:`.graph`: ``GraphRows``;
- :mod:`.terms` and :mod:`.search`: BM25 postings and the SQL ``CandidateSearch``.

See ``docs/postgres.md``.
"""

from omnimem.store.postgres.connect import is_postgres_url

__all__ = ["is_postgres_url"]
