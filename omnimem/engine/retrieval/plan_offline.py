"""The offline planner: rewritten queries from the question's own form, and a second hop, with no model.

Round 1 searches the question, and beside it its content words alone when the question asks
for many things at once (an aggregation cue: "how many", "what kind of", "all the", "which",
a plural noun): such a question's frame ("What are ... ?") pulls dense towards turns that ask,
its content words towards turns that tell. Round 2 (when ``plan_rounds`` allows one) is a
second hop: the words the first round's best hits add to the question (names first; no
speaker names, no stop words) searched with the question's content words, so evidence that
shares the hits' subject but not the question's words can rank ("What does her daughter
like?" -> the daughter's name -> what she likes). All rankings are fused by rank
(:mod:`.planner`); nothing here knows a data set, a speaker or a question category.
"""

from __future__ import annotations

import re
import time
from collections import Counter

from omnimem.text import content_words, query_stop
from omnimem.engine.retrieval.planner import Rounds
from omnimem.results import Context, Plan

HOP_HITS = 3  # the first round's best hits the second hop reads
HOP_WORDS = 6  # words they add to the question, at most
_AGGREGATE = re.compile(r"\b(how many|how often|what (?:kinds?|sorts?|types?) of|all the|which|every|list)\b",
                        re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_][\w'-]*")


def aggregation_cue(question: str) -> str | None:
    """What in the question asks for many things at once: a cue phrase, or a plural content noun."""
    found = _AGGREGATE.search(question)
    if found:
        return str(found.group(0)).lower()
    stop = query_stop()
    for word in _WORD.findall(question):
        w = str(word).lower()
        plural = w.endswith("s") and not w.endswith(("ss", "us", "is"))
        if plural and "'" not in w and len(w) > 4 and w not in stop:
            return w
    return None


def hop_words(question: str, texts: list[str], names: set[str]) -> list[str]:
    """The words ``texts`` add to ``question``: capitalised words (names) first, then by how many of the
    texts hold them, then by first appearance; no stop words, no speaker ``names``, no word of the question."""
    stop = query_stop()
    asked = {w.lower() for w in _WORD.findall(question)}
    skip = stop | asked | {w.lower() for name in names for w in _WORD.findall(name)}
    counts: Counter[str] = Counter()
    capital: set[str] = set()
    first: dict[str, int] = {}
    for text in texts:
        for i, word in enumerate(_WORD.findall(text)):
            w = word.lower()
            if len(w) < 3 or w in skip:
                continue
            first.setdefault(w, len(first))
            counts[w] += 1
            if word[0].isupper() and i > 0:  # not the sentence's first word: a name
                capital.add(w)
    ranked = sorted(counts, key=lambda w: (w not in capital, -counts[w], first[w]))
    return ranked[:HOP_WORDS]


def offline_search(rounds: Rounds) -> Context:
    """The question, its rewrite and a second hop, fused and packed once (see the module)."""
    q = rounds.query
    retriever = rounds.retriever
    cue = aggregation_cue(q.text)
    first = [q.text]
    reason = "the question"
    if cue is not None:
        first.append(content_words(q.text))
        reason = f"the question, and its content words alone (aggregation cue {cue!r})"
    rounds.search(first, reason)
    note = None
    if retriever.deps.settings.plan_rounds > 0:
        started = time.perf_counter()
        best = rounds.merged().order[:HOP_HITS]
        rows = retriever.deps.store.get_rows(best)
        units = [rows[r] for r in best if r in rows]
        names = set(retriever.signals.speakers.get(q.scope)) | {u.speaker for u in units if u.speaker}
        words = hop_words(q.text, [u.summary for u in units], names)
        rounds.time("hop", started)
        if words:
            hop = " ".join([content_words(q.text), *words])
            if not rounds.search([hop], f"second hop: the words the best {len(units)} hits add ({', '.join(words)})"):
                note = "no second hop: it would search a query searched already"
        else:
            note = "no second hop: the best hits add no words to the question"
    return rounds.context(lambda ms: Plan("offline", tuple(rounds.rounds), ms=dict(ms), note=note))
