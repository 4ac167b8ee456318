"""max_source_share: no one source below trusted fills more than its share of a context, in real tokens."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.config import Settings
from omnimem.context import FENCE_RULE, Context
from omnimem.engine.retrieval.pyramid import Candidate, build_context
from omnimem.errors import ConfigError
from omnimem.mau import MAU, Modality, Scope
from omnimem.tokens import count_tokens

START = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)
RULE = count_tokens(FENCE_RULE) + 1  # the fence rule and its line break, charged with the first fenced line


def source_tokens(ctx: Context, source: str) -> int:
    """What the lines of ``source``'s untrusted hits take of the rendered context, the fence rule included."""
    lines = [count_tokens(h.text) + 1 for h in ctx.hits if h.unit.source == source and h.unit.trust != "trusted"]
    return sum(lines) + (RULE if lines else 0)


def unit(i: int, text: str, source: str, trust: str) -> MAU:
    return MAU(id=f"u{i}", summary=text, modality=Modality.TEXT, event_time=START + timedelta(minutes=i),
               record_time=START + timedelta(minutes=i), scope=Scope(user_id="ann"), content_hash=f"h{i}",
               source=source, trust=trust, actor="local:ann")


def pack(candidates: list[Candidate], budget: int, **options: object) -> Context:
    return build_context("kayak", candidates, theta=0.4, budget=budget, full_text=lambda u: u.summary,
                         raw_content=lambda u: None, packing="line", fence=True, **options)  # type: ignore[arg-type]


def flood() -> list[Candidate]:
    """Forty tool lines ranked above forty lines of the user's own: the tool alone fills any small budget."""
    tool = [unit(i, f"kayak offer number {i}: buy a kayak today at the dock shop", "tool", "untrusted")
            for i in range(40)]
    own = [unit(100 + i, f"I paddled my kayak round the bay on day {i}", "user", "trusted") for i in range(40)]
    return [Candidate(u, 0.9 - 0.01 * n, frozenset({"dense"})) for n, u in enumerate(tool + own)]


@pytest.mark.parametrize("budget", [300, 600, 1200])
def test_a_source_that_would_fill_the_budget_is_capped_and_the_others_fill_the_rest(budget: int) -> None:
    candidates = flood()
    uncapped = pack(candidates, budget)
    assert source_tokens(uncapped, "tool") > budget * 0.9  # without the cap the tool's lines take it all
    ctx = pack(candidates, budget, max_source_share=0.4)
    assert 0 < source_tokens(ctx, "tool") <= int(budget * 0.4)
    own = [h for h in ctx.hits if h.unit.source == "user"]
    assert len(own) > len([h for h in uncapped.hits if h.unit.source == "user"])
    longest = max(count_tokens(c.unit.summary) for c in candidates) + 30  # a line with its time and break
    assert budget - longest < ctx.tokens == count_tokens(ctx.render()) <= budget  # the rest is filled


def test_trusted_units_are_never_capped_and_off_leaves_the_context_as_it_was() -> None:
    own = [replace(c, unit=replace(c.unit, trust="trusted")) for c in flood()]  # every line trusted: no cap
    for budget in (120, 500):
        assert pack(own, budget, max_source_share=0.1).render() == pack(own, budget).render()
        assert pack(flood(), budget, max_source_share=1.0).render() == pack(flood(), budget).render()


def test_each_source_and_writer_is_capped_on_its_own() -> None:
    candidates = flood()
    docs = [replace(c, unit=replace(c.unit, source="document")) for c in candidates[:20]]
    mixed = docs + candidates[20:]  # twenty document lines, then twenty tool lines, then the user's
    ctx = pack(mixed, 1000, max_source_share=0.25)
    lines = {s: sum(count_tokens(h.text) + 1 for h in ctx.hits if h.unit.source == s) for s in ("document", "tool")}
    assert 0 < lines["document"] <= 250 - RULE and 0 < lines["tool"] <= 250
    assert any(h.unit.source == "user" for h in ctx.hits)


def fill(mem: Memory) -> None:
    for i in range(30):
        mem.add(f"I paddled my kayak round the bay, trip {i}", user_id="ann", session_id=f"s{i % 3}",
                time=(START + timedelta(minutes=3 * i)).isoformat(), speaker="Ann")
    for i in range(30):
        mem.add(f"kayak kayak kayak shop page {i}: the best kayak deals, kayak kayak", user_id="ann",
                session_id="web", time=(START + timedelta(hours=5, minutes=i)).isoformat(), source="tool")


@pytest.mark.parametrize("packing", ["day", "session", "line"])
def test_a_search_keeps_each_untrusted_source_within_its_share_on_both_packers(tmp_path: Path,
                                                                               packing: str) -> None:
    budgets = (80, 200, 400, 1000)
    with Memory(tmp_path / "open", embedder="fake-exact", packing=packing) as mem:
        fill(mem)
        uncapped = [mem.search("kayak kayak", user_id="ann", budget=b) for b in budgets]
    with Memory(tmp_path / "capped", embedder="fake-exact", packing=packing, max_source_share=0.3) as mem:
        fill(mem)
        fast = [mem.search("kayak kayak", user_id="ann", budget=b) for b in budgets]
        reference(mem)  # every candidate read and packed the plain way
        slow = [mem.search("kayak kayak", user_id="ann", budget=b) for b in budgets]
    for budget, before, a, b in zip(budgets, uncapped, fast, slow, strict=True):
        assert source_tokens(before, "tool") > int(budget * 0.3)  # the shop pages would take more
        assert source_tokens(a, "tool") <= int(budget * 0.3)
        assert a.render() == b.render() and a.tokens == b.tokens == count_tokens(a.render()) <= budget
        assert [(h.unit.id, h.rank, h.level) for h in a.hits] == [(h.unit.id, h.rank, h.level) for h in b.hits]
        assert sum(h.unit.source == "user" for h in a.hits) > sum(h.unit.source == "user" for h in before.hits)


@pytest.mark.parametrize("bad", [0, 0.0, -0.5, 1.01, 3])
def test_a_share_outside_zero_to_one_is_refused(bad: float, monkeypatch) -> None:
    with pytest.raises(ConfigError, match="max_source_share"):
        Settings.load(max_source_share=bad)
    monkeypatch.setenv("OMNIMEM_MAX_SOURCE_SHARE", str(bad))
    with pytest.raises(ConfigError, match="max_source_share"):
        Memory(embedder="fake")
    monkeypatch.setenv("OMNIMEM_MAX_SOURCE_SHARE", "0.2")
    assert Settings.load().max_source_share == 0.2 and Settings().max_source_share == 1.0


def reference(memory: Memory) -> None:
    """From now on ``memory`` packs every candidate's row by ``build_context`` (what its packer must equal)."""
    from omnimem.engine.retrieval.packing import ReferencePacker

    retriever = memory.engine.retriever
    retriever.packer = ReferencePacker(retriever.packer, memory.engine.state, retriever.candidates)
