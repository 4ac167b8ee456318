"""BM25 postings in SQL: the stemmed terms of each unit's search text, written in the unit's transaction.

A unit is found by the same text as in the embedded backend: its own line
after the ``sparse_context`` text lines before it in its scope
(:func:`omnimem.text.embed_texts`), tokenised by the same
function (stop words out, Porter stems, :func:`omnimem.text.tokenize`; a store of another ``language``:
:func:`omnimem.text.tokenize_in`).
So BM25 in SQL (:mod:`omnimem.store.postgres.search`) ranks like bm25s.
When a unit goes, the units whose text carried its words are re-indexed in
the same transaction: no term of deleted text stays behind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omnimem.text import ENGLISH, check_store_language, tokenize_in
from omnimem.text import EmbedInput, embed_texts
from omnimem.mau import MAU, Modality, Scope, search_text
from omnimem.store.postgres.governance_sql import tenant_of

_EXACT = ("tenant = %s AND user_id IS NOT DISTINCT FROM %s AND agent_id IS NOT DISTINCT FROM %s "
          "AND session_id IS NOT DISTINCT FROM %s")


def _exact(scope: Scope) -> tuple[str, ...]:
    return tenant_of(scope), scope.user_id, scope.agent_id, scope.session_id  # type: ignore[return-value]


@dataclass(slots=True)
class Reindex:
    """Units whose search text changes because units before them go: (row id, scope), new terms, old length."""

    keys: list[tuple[int, Scope]]
    tokens: list[list[str]]
    old_len: int


class TermIndexer:
    """Writes and rewrites the ``terms`` postings and ``units.doc_len`` (inside the caller's transaction)."""

    def __init__(self, context: int, language: str = ENGLISH) -> None:
        self.context = max(0, int(context))
        self.language = language  # the store's BM25 language (recorded in its meta)

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        """The BM25 terms of ``texts`` in this store's language."""
        return tokenize_in(texts, self.language)

    def _history(self, conn: Any, scope: Scope, before_rid: int, skip: Sequence[int] = ()) -> list[str]:
        if not self.context:
            return []
        rows = conn.execute(f"SELECT speaker, summary FROM units WHERE {_EXACT} AND modality = 'text' AND rid < %s "
                            "AND rid <> ALL(%s) ORDER BY rid DESC LIMIT %s",
                            (*_exact(scope), before_rid, list(skip), self.context)).fetchall()
        return [search_text(s, t) for s, t in reversed(rows)]

    def tokens(self, conn: Any, rows: Sequence[tuple[int, MAU]]) -> list[list[str]]:
        """The search terms of units about to be inserted (their row ids assigned, in order)."""
        if not rows:
            return []
        first: dict[Scope, int] = {}
        for rid, unit in rows:
            first.setdefault(unit.scope, rid)
        history = {scope: self._history(conn, scope, rid) for scope, rid in first.items()}
        items = [EmbedInput(u.scope, u.speaker, u.summary, u.modality) for _, u in rows]
        return self.tokenize(embed_texts(items, context=self.context, history=history))

    def copy(self, conn: Any, keys: Sequence[tuple[int, Scope]], tokens: Sequence[list[str]]) -> None:
        """Write the postings of these units (one COPY), each with its unit's length (``units.doc_len``)."""
        with conn.cursor() as cur, \
                cur.copy("COPY terms (tenant, rid, term, tf, doc_len) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["text", "int8", "text", "int4", "int4"])
            for (rid, scope), words in zip(keys, tokens):
                for term, tf in Counter(words).items():
                    copy.write_row((tenant_of(scope), rid, term, tf, len(words)))

    def reindex_plan(self, conn: Any, deleted: Sequence[tuple[int, Scope]]) -> Reindex:
        """The units whose search text included a deleted unit's words, with their new terms.

        Read before the delete (the deleted rows are skipped), so the caller can lock these rows and every
        term it will write in the one lock order (:mod:`omnimem.store.postgres.locks`) before writing any.
        """
        plan = Reindex([], [], 0)
        if not self.context:
            return plan
        gone = sorted(rid for rid, _ in deleted)
        by_scope: dict[Scope, int] = {}
        for rid, scope in deleted:
            by_scope[scope] = min(rid, by_scope.get(scope, rid))
        for scope, rid in by_scope.items():
            rows = conn.execute(f"SELECT rid, speaker, summary, modality, doc_len FROM units WHERE {_EXACT} "
                                "AND rid > %s AND rid <> ALL(%s) ORDER BY rid", (*_exact(scope), rid, gone)).fetchall()
            affected, texts_seen = [], 0  # every follower up to `context` text units after the last deletion
            last_deleted = max(r for r, s in deleted if s == scope)
            for row in rows:
                affected.append(row)
                if row[0] > last_deleted and row[3] == Modality.TEXT.value:
                    texts_seen += 1
                    if texts_seen >= self.context:
                        break
            if not affected:
                continue
            items = [EmbedInput(scope, s, t, Modality(m)) for _, s, t, m, _ in affected]
            texts = embed_texts(items, context=self.context,
                                history={scope: self._history(conn, scope, affected[0][0], gone)})
            plan.keys.extend((r[0], scope) for r in affected)
            plan.tokens.extend(self.tokenize(texts))
            plan.old_len += sum(r[4] for r in affected)
        return plan

    def apply(self, conn: Any, plan: Reindex) -> int:
        """Write the planned postings (the caller deleted the old ones) and lengths; returns the length change."""
        if not plan.keys:
            return 0
        self.copy(conn, plan.keys, plan.tokens)
        with conn.cursor() as cur:
            cur.executemany("UPDATE units SET doc_len = %s WHERE rid = %s",
                            [(len(words), rid) for (rid, _), words in zip(plan.keys, plan.tokens)])
        return sum(len(words) for words in plan.tokens) - plan.old_len

    def rebuild(self, conn: Any) -> None:
        """Every unit's postings again (after ``sparse_context`` changed), in the language the store recorded."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'language'").fetchone()
        check_store_language(row[0] if row else ENGLISH, self.language, "in this database")
        conn.execute("DELETE FROM terms")
        rows = conn.execute("SELECT rid, user_id, agent_id, session_id, speaker, summary, modality FROM units "
                            "ORDER BY rid").fetchall()
        items = [EmbedInput(Scope(u, a, s), sp, t, Modality(m)) for _, u, a, s, sp, t, m in rows]
        self.apply(conn, Reindex([(r[0], Scope(r[1], r[2], r[3])) for r in rows],
                                 self.tokenize(embed_texts(items, context=self.context)), 0))
        conn.execute("UPDATE counters SET docs = (SELECT COUNT(*) FROM units), "
                     "doc_len = (SELECT COALESCE(SUM(doc_len), 0) FROM units)")
