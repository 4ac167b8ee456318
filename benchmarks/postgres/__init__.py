"""PostgreSQL: the PostgreSQL backend beside the embedded one at scale, its BM25 SQL, its ingest cost."""
