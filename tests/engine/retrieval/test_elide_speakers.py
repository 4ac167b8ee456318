"""``elide_speakers``: a day-packed line that goes on from the same speaker omits ``speaker: ``."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnimem import Context, Memory
from omnimem.engine.retrieval.pyramid import (
    NEWLINE, STAMP, Candidate, build_context, fit_plan, grouped_facts, talk_facts,
)
from omnimem.mau import MAU, Modality, Scope
from omnimem.results import stamped
from omnimem.tokens import count_tokens

DAY = datetime(2023, 5, 8, tzinfo=timezone.utc)


def said(uid: str, text: str, minute: int, speaker: str | None = "Mel", session: str = "s",
         modality: Modality = Modality.TEXT, seq: int | None = None) -> Candidate:
    """A message ``minute`` minutes after midnight of 8 May 2023 (later days past 1,440)."""
    when = DAY + timedelta(minutes=minute)
    unit = MAU(uid, text, modality, when, when, Scope("u", session_id=session), "h" + uid, speaker=speaker)
    return Candidate(unit, 0.5, frozenset({"dense"}), seq=seq)


def packed(cands: list[Candidate], budget: int = 1000, **options: object) -> Context:
    return build_context("q", cands, theta=0.4, budget=budget, full_text=lambda u: u.summary,
                         raw_content=lambda u: None, packing="day", **options)  # type: ignore[arg-type]


def test_a_line_that_goes_on_from_the_same_speaker_omits_the_name():
    chat = [said("a", "morning!", 541), said("b", "coffee at ten?", 542), said("c", "sure", 543, "Ann"),
            said("d", "see you there", 544, "Ann"), said("e", "back home", 18 * 60 + 30, "Ann"),
            said("f", "good night", 18 * 60 + 31, "Ann")]
    ctx = packed(chat[::-1], elide_speakers=True)  # rank order is not time order
    assert ctx.render() == ("[2023-05-08 09:01]\nMel: morning!\ncoffee at ten?\nAnn: sure\nsee you there\n"
                            "18:30 Ann: back home\ngood night")  # a stamped line names its speaker again
    assert ctx.tokens == count_tokens(ctx.render())
    plain = packed(chat, elide_speakers=False)
    assert "Mel: coffee at ten?" in plain.render() and ctx.tokens < plain.tokens


def test_names_stay_after_a_header_and_around_media_and_lines_without_a_speaker():
    chat = [said("a", "hi", 600), said("b", "next day", 1440 + 600), said("c", "a photo", 601, modality=Modality.IMAGE),
            said("d", "nice", 602), said("e", "anyone?", 603, speaker=None), said("f", "me", 604)]
    lines = packed(chat, elide_speakers=True).lines()
    assert lines == ["[2023-05-08 10:00]", "Mel: hi", "(image) Mel: a photo", "Mel: nice", "anyone?", "Mel: me",
                     "[2023-05-09 10:00]", "Mel: next day"]


def test_lines_of_one_minute_go_in_the_order_they_were_said():
    """Turns sharing a time render in row order: the speaker above is the one said before, not ranked before."""
    chat = [said("a", "one", 600, "Ann", seq=1), said("b", "two", 600, "Bo", seq=2), said("c", "three", 600, "Bo", seq=3)]
    ctx = packed([chat[2], chat[0], chat[1]], elide_speakers=True)
    assert ctx.lines() == ["[2023-05-08 10:00]", "Ann: one", "Bo: two", "three"]
    assert ctx.tokens == count_tokens(ctx.render())


def arrangement_cost(cands: list[Candidate], costs: list[int], saves: list[int], enter: list[bool], gap: int,
                     mode: bool | str = True) -> int:
    """What the entered lines cost as they render, in the plan's units: per session and day its first line's header, each
    line and its break, each stamp (its tokens and a space), less each name a line omits (with ``"auto"`` only
    under a line of another time)."""
    groups: dict[object, list[int]] = {}
    for i, fits in enumerate(enter):
        if fits:
            unit = cands[i].unit
            groups.setdefault((unit.scope.session_id, unit.event_time and unit.event_time.date()), []).append(i)
    total = 0
    for members in groups.values():
        members.sort(key=lambda i: cands[i].seq or 0)  # said in row order, a later minute a later row
        total += count_tokens(f"[{cands[members[0]].unit.event_time:%Y-%m-%d %H:%M}]") + NEWLINE
        for before, line in zip([None, *members], members):
            total += costs[line] + NEWLINE
            if before is None:
                continue
            minute, earlier = (cands[line].unit.event_time, cands[before].unit.event_time)
            if stamped(earlier.hour * 60 + earlier.minute, minute.hour * 60 + minute.minute, gap):
                total += count_tokens(f"{minute:%H:%M}") + STAMP
            elif cands[before].unit.speaker == cands[line].unit.speaker and (mode is True or minute != earlier):
                total -= saves[line]
    return total


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 * 1440 - 1), st.sampled_from(["s", "t"]), st.sampled_from(["Ann", "Bo"]),
                          st.sampled_from(["ok", "see you at the lake", "did you bring the kite?", "lol"])),
                min_size=1, max_size=25),
       st.integers(30, 400), st.sampled_from([1, 5, 30, 60]), st.sampled_from([True, "auto"]))
def test_the_plan_charges_exactly_the_names_the_lines_render_with(chat, budget, gap, mode):
    """Adding a line changes its own prefix and the next line's (and stamps, header): each charged as rendered,
    whether names go wherever the speaker goes on (True) or only under a line of another time ("auto")."""
    chat.sort(key=lambda turn: turn[0])  # row order is time order, as when a chat is written as it goes
    cands = [said(f"m{i}", text, minute + 1440 * (session == "t"), who, session, seq=i)  # one day per session
             for i, (minute, session, who, text) in enumerate(chat)]
    cands = cands[::3] + cands[1::3] + cands[2::3]  # rank order is not time order
    units = [c.unit for c in cands]
    texts = [f"{u.speaker}: {u.summary}" for u in units]
    costs = [count_tokens(t) for t in texts]
    keys, header_costs, minutes, stamp_costs = grouped_facts(units, "day", count_tokens)
    speakers, saves, orders, times = talk_facts(units, [c.seq for c in cands], texts, costs, count_tokens)
    plan = fit_plan(costs, keys, header_costs, minutes, stamp_costs, budget=budget, gap=gap, speakers=speakers,
                    saves=saves, orders=orders, times=times if mode == "auto" else None)
    assert plan.used <= budget
    assert plan.used == arrangement_cost(cands, costs, saves, plan.enter, gap, mode)
    ctx = packed(cands, budget=budget, stamp_gap=gap, elide_speakers=mode)
    assert ctx.tokens == count_tokens(ctx.render()) <= budget
    assert [h.unit.id for h in ctx.hits] == [c.unit.id for c, fits in zip(cands, plan.enter) if fits]


def test_memory_takes_the_setting_and_a_context_renders_the_same_after_its_round_trip(tmp_path):
    start = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
    who = ["Ann", "Ann", "Ann", "Bo", "Bo", "Ann"]
    turns = [{"speaker": s, "text": f"the kite again, part {i}", "time": (start + timedelta(minutes=i)).isoformat()}
             for i, s in enumerate(who)]
    with Memory(tmp_path / "store", embedder="fake-exact", elide_speakers=True) as m:
        m.add_dialogue(turns, user_id="u", session_id="chat")
        ctx = m.search("kite", user_id="u")
        fresh = m.search("kite", user_id="u")  # the second search packs from remembered line facts
    assert ctx.lines() == ["[2024-03-01 09:00]", "Ann: the kite again, part 0", "the kite again, part 1",
                           "the kite again, part 2", "Bo: the kite again, part 3", "the kite again, part 4",
                           "Ann: the kite again, part 5"]
    assert ctx.elide_speakers and ctx.tokens == count_tokens(ctx.render()) and fresh.render() == ctx.render()
    again = Context.from_dict(ctx.to_dict())
    assert again.render() == ctx.render()
    older = {k: v for k, v in ctx.to_dict().items() if k != "elide_speakers"}  # from a server before the setting
    assert sum(line.startswith(("Ann: ", "Bo: ")) for line in Context.from_dict(older).lines()) == 6
    with Memory(tmp_path / "store", embedder="fake-exact", elide_speakers=False) as m:
        assert sum(line.startswith(("Ann: ", "Bo: ")) for line in m.search("kite", user_id="u").lines()) == 6
    with Memory(tmp_path / "store", embedder="fake-exact") as m:  # the default ("auto"): these messages have times
        auto = m.search("kite", user_id="u")  # of their own, so names go as with True
    assert auto.elide_speakers == "auto" and auto.lines() == ctx.lines()
    assert Context.from_dict(auto.to_dict()).render() == auto.render()


def test_by_default_a_transcript_whose_turns_share_their_sessions_time_keeps_every_name(tmp_path):
    """``"auto"``: turns that carry only their session's time (a transcript) keep their names; ``True`` omits them."""
    who = ["Ann", "Ann", "Bo", "Bo", "Bo"]
    turns = [{"speaker": s, "text": f"the kite again, part {i}", "time": "2024-03-01T09:00:00+00:00"}
             for i, s in enumerate(who)]
    with Memory(tmp_path / "store", embedder="fake-exact") as m:
        m.add_dialogue(turns, user_id="u", session_id="talk")
        kept = m.search("kite", user_id="u")
    assert kept.lines() == ["[2024-03-01 09:00]", *(f"{s}: the kite again, part {i}" for i, s in enumerate(who))]
    assert kept.tokens == count_tokens(kept.render())
    with Memory(tmp_path / "store", embedder="fake-exact", elide_speakers=True) as m:
        assert m.search("kite", user_id="u").lines() == [
            "[2024-03-01 09:00]", "Ann: the kite again, part 0", "the kite again, part 1", "Bo: the kite again, part 2",
            "the kite again, part 3", "the kite again, part 4"]


@pytest.mark.parametrize("mode", [True, "auto"])
def test_packing_from_remembered_facts_gives_the_context_packing_every_candidate_gives(tmp_path, mode):
    """The fast path (line facts remembered per row, only fitting rows read) equals the full packing."""
    from benchmarks.retrieval.packing_cost import short_chats, short_queries

    with Memory(tmp_path / "chats", embedder="fake-exact", elide_speakers=mode) as m:
        for user, session, dialogue in short_chats(600):
            m.add_dialogue(dialogue, user_id=user, session_id=session)
        asked = short_queries(12)
        fast = [m.search(text, budget=budget, user_id=user) for text, user in asked for budget in (150, 1000)]
        reference(m)  # every candidate read and packed the plain way
        full = [m.search(text, budget=budget, user_id=user) for text, user in asked for budget in (150, 1000)]
    nameless = [line for ctx in fast for line in ctx.lines() if not line.startswith("[") and ": " not in line]
    assert len(nameless) > 50  # names were left out, in both packings
    for a, b in zip(fast, full, strict=True):
        assert a.render() == b.render() and a.tokens == b.tokens == count_tokens(a.render()) <= a.budget
        assert [(h.unit.id, h.rank, h.level) for h in a.hits] == [(h.unit.id, h.rank, h.level) for h in b.hits]


def test_the_setting_is_true_false_or_auto_from_any_layer(tmp_path, monkeypatch):
    from omnimem.config import Settings
    from omnimem.errors import ConfigError

    assert Settings().elide_speakers == "auto"
    monkeypatch.setenv("OMNIMEM_ELIDE_SPEAKERS", "Auto")
    assert Settings.load().elide_speakers == "auto"
    monkeypatch.setenv("OMNIMEM_ELIDE_SPEAKERS", "off")
    assert Settings.load().elide_speakers is False
    assert Settings.load(elide_speakers="yes").elide_speakers is True
    for bad in ("sometimes", 2):
        with pytest.raises(ConfigError, match="elide_speakers"):
            Settings.load(elide_speakers=bad)
    with pytest.raises(ConfigError, match="elide_speakers"):
        Memory(tmp_path / "store", embedder="fake-exact", elide_speakers="never")
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())


ZONES = st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.datetimes(timezones=ZONES), st.integers(0, 3)), min_size=2, max_size=12),
       st.booleans())
def test_the_fits_integer_order_is_the_renderings_order_and_equality(times, naive):
    """``talk_order`` (what the fit sorts a group by, and compares times with) agrees with ``spoken_order``."""
    from omnimem.engine.retrieval.pyramid import talk_order
    from omnimem.results import spoken_order

    units = [MAU(f"m{i}", "hi", Modality.TEXT, when.replace(tzinfo=None) if naive else when, DAY, Scope("u"), "h")
             for i, (when, _) in enumerate(times)]
    seqs = [seq for _, seq in times]
    by_render = sorted(range(len(units)), key=lambda i: (spoken_order(units[i], seqs[i]), i))
    by_fit = sorted(range(len(units)), key=lambda i: (talk_order(units[i], seqs[i]), i))
    assert by_fit == by_render
    for a in units:
        for b in units:
            assert (talk_order(a, 0)[0] == talk_order(b, 0)[0]) == (a.event_time == b.event_time)


def reference(memory: Memory) -> None:
    """From now on ``memory`` packs every candidate's row by ``build_context`` (what its packer must equal)."""
    from omnimem.engine.retrieval.packing import ReferencePacker

    retriever = memory.engine.retriever
    retriever.packer = ReferencePacker(retriever.packer, memory.engine.state, retriever.candidates)
