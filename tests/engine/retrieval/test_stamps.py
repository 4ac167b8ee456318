"""Day packing stamps a time of day where the conversation resumes, not on every message (``stamp_gap``)."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem import Context, Memory
from omnimem.engine.retrieval.pyramid import NEWLINE, STAMP, Candidate, build_context, fit_plan, grouped_facts
from omnimem.errors import ConfigError
from omnimem.mau import MAU, Modality, Scope
from omnimem.results import stamped
from omnimem.tokens import count_tokens

DAY = datetime(2023, 5, 8, tzinfo=timezone.utc)


def said(uid: str, text: str, minute: int, speaker: str = "Mel", session: str = "s") -> Candidate:
    """A message ``minute`` minutes after midnight of 8 May 2023 (later days past 1,440)."""
    when = DAY + timedelta(minutes=minute)
    return Candidate(MAU(uid, text, Modality.TEXT, when, when, Scope("u", session_id=session), "h" + uid,
                         speaker=speaker), 0.5, frozenset({"dense"}))


def packed(cands: list[Candidate], budget: int = 1000, **options: object) -> Context:
    return build_context("q", cands, theta=0.4, budget=budget, full_text=lambda u: u.summary,
                         raw_content=lambda u: None, packing="day", **options)  # type: ignore[arg-type]


def test_a_time_of_day_only_where_the_conversation_resumes_after_a_pause():
    chat = [said("a", "morning!", 9 * 60 + 1), said("b", "coffee at ten?", 9 * 60 + 3, "Ann"),
            said("c", "sure", 9 * 60 + 20), said("d", "here now", 9 * 60 + 45, "Ann"),  # each < 30 min after the last
            said("e", "back home", 18 * 60 + 30), said("f", "good night", 18 * 60 + 31, "Ann")]
    ctx = packed(chat[::-1])  # rank order is not time order
    assert ctx.render() == ("[2023-05-08 09:01]\nMel: morning!\nAnn: coffee at ten?\nMel: sure\nAnn: here now\n"
                            "18:30 Mel: back home\nAnn: good night")
    assert ctx.tokens == count_tokens(ctx.render())
    hourly = packed(chat, stamp_gap=60)
    assert "18:30 Mel: back home" in hourly.render() and hourly.render().count(":") == ctx.render().count(":")
    every = packed(chat, stamp_gap=1)  # the rendering before the setting: a stamp wherever the minute changes
    assert every.render().splitlines()[2:5] == ["09:03 Ann: coffee at ten?", "09:20 Mel: sure", "09:45 Ann: here now"]
    assert ctx.tokens < every.tokens


def test_a_header_per_session_and_day_and_its_first_line_is_never_stamped():
    chat = [said("a", "hi", 600), said("b", "next day", 1440 + 600), said("c", "other chat", 605, session="t"),
            said("d", "later", 1440 + 700)]
    assert packed(chat).render() == ("[2023-05-08 10:00]\nMel: hi\n[2023-05-08 10:05]\nMel: other chat\n"
                                     "[2023-05-09 10:00]\nMel: next day\n11:40 Mel: later")


def test_a_line_that_comes_first_moves_the_header_and_the_old_first_line_may_get_its_stamp():
    """Ranked after the lines it precedes: the header shows the earliest time; the plan charges exactly that."""
    chat = [said("late", "see you", 700), said("early", "good morning", 600)]
    ctx = packed(chat)
    assert ctx.render() == "[2023-05-08 10:00]\nMel: good morning\n11:40 Mel: see you"
    assert ctx.tokens == count_tokens(ctx.render())
    tight = packed(chat, budget=ctx.tokens - 1)
    assert [h.unit.id for h in tight.hits] == ["late"] and tight.tokens <= tight.budget


def arrangement_cost(costs: list[int], minutes: list[int], keys: list[object], header_costs: list[int],
                     stamp_costs: list[int], enter: list[bool], gap: int) -> int:
    """What the entered lines cost as rendered: per group its earliest line's header, each line, each stamp."""
    total = 0
    groups: dict[object, list[int]] = {}
    for i, fits in enumerate(enter):
        if fits:
            groups.setdefault(keys[i], []).append(i)
    for members in groups.values():
        members.sort(key=lambda i: minutes[i])
        total += header_costs[members[0]] + NEWLINE
        for before, line in zip([None, *members], members):
            total += costs[line] + NEWLINE
            if before is not None and stamped(minutes[before], minutes[line], gap):
                total += stamp_costs[line] + STAMP
    return total


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 * 1440 - 1), st.sampled_from(["s", "t"]),
                          st.sampled_from(["ok", "see you at the lake", "did you bring the kite?", "lol"])),
                min_size=1, max_size=25),
       st.integers(30, 400), st.sampled_from([1, 5, 30, 60]))
def test_the_plan_charges_exactly_the_headers_and_stamps_the_lines_render_with(chat, budget, gap):
    """Adding a line changes its own stamp, the next line's and the header: each charged as it is rendered."""
    cands = [said(f"m{i}", text, minute, session=session) for i, (minute, session, text) in enumerate(chat)]
    units = [c.unit for c in cands]
    texts = [f"Mel: {u.summary}" for u in units]
    costs = [count_tokens(t) for t in texts]
    keys, header_costs, minutes, stamp_costs = grouped_facts(units, "day", count_tokens)
    assert keys is not None and header_costs is not None and minutes is not None and stamp_costs is not None
    plan = fit_plan(costs, keys, header_costs, minutes, stamp_costs, budget=budget, gap=gap)
    assert plan.used <= budget
    assert plan.used == arrangement_cost(costs, [m for m in minutes if m is not None], list(keys), header_costs,
                                         stamp_costs, plan.enter, gap)
    ctx = packed(cands, budget=budget, stamp_gap=gap)
    assert ctx.tokens == count_tokens(ctx.render()) <= budget
    assert [h.unit.id for h in ctx.hits] == [c.unit.id for c, fits in zip(cands, plan.enter) if fits]


def test_memory_takes_the_gap_as_a_setting_and_a_context_renders_the_same_after_its_round_trip(tmp_path):
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    minutes = [0, 1, 2, 50, 51, 200]
    turns = [{"speaker": "Ann" if i % 2 else "Bo", "text": f"the kite again, part {i}",
              "time": (start + timedelta(minutes=m)).isoformat()} for i, m in enumerate(minutes)]
    with Memory(tmp_path / "store", embedder="fake-exact", stamp_gap=45) as m:
        m.add_dialogue(turns, user_id="u", session_id="chat")
        ctx = m.search("kite", user_id="u")
    stamps = [line.split(" ")[0] for line in ctx.lines() if line[:2].isdigit()]
    assert stamps == ["09:50", "12:20"]  # 50 - 2 and 200 - 51 minutes after the line before: at least 45
    assert ctx.stamp_gap == 45 and ctx.tokens == count_tokens(ctx.render())
    again = Context.from_dict(ctx.to_dict())
    assert again.render() == ctx.render()
    older = {k: v for k, v in ctx.to_dict().items() if k != "stamp_gap"}  # from a server before the setting
    assert len([line for line in Context.from_dict(older).lines() if line[:2].isdigit()]) == 5
    with pytest.raises(ConfigError, match="stamp_gap"):
        Memory(embedder="fake-exact", stamp_gap=0)
