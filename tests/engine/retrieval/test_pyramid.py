from datetime import datetime, timezone

from omnimem.mau import MAU, Modality, Scope
from omnimem.engine.retrieval.pyramid import NEWLINE, Candidate, build_context
from omnimem.results import RawContent, unit_line
from omnimem.tokens import count_tokens

T = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def unit(uid: str, summary: str, modality: Modality = Modality.TEXT) -> MAU:
    return MAU(uid, summary, modality, T, T, Scope("u"), "h" + uid, speaker="Mel")


FULL = {"long": "I painted a sunset last weekend " * 20}


def full_text(u: MAU) -> str:
    return FULL.get(u.id, u.summary)


def no_raw(u: MAU) -> None:
    return None


def test_level_one_lines_in_rank_order_and_tokens_match_render():
    cands = [Candidate(unit("a", "first memory"), 0.3, frozenset({"dense"})),
             Candidate(unit("b", "second memory"), 0.2, frozenset({"sparse"}))]
    ctx = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw)
    assert [h.unit.id for h in ctx.hits] == ["a", "b"]
    assert [h.level for h in ctx.hits] == [1, 1]
    assert ctx.render() == "[2023-05-08 13:56] Mel: first memory\n[2023-05-08 13:56] Mel: second memory"
    assert ctx.tokens == count_tokens(ctx.render())


def test_level_two_swaps_in_full_text_only_above_theta():
    cands = [Candidate(unit("long", "I painted a sunset …"), 0.9, frozenset({"dense"}))]
    high = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw)
    assert high.hits[0].level == 2
    assert FULL["long"].strip() in high.render()
    low = build_context("q", cands, theta=0.95, budget=1000, full_text=full_text, raw_content=no_raw)
    assert low.hits[0].level == 1
    assert FULL["long"].strip() not in low.render()


def test_budget_is_never_exceeded_and_skipped_lines_are_reported():
    cands = [Candidate(unit(str(i), f"memory number {i} " * 5), 0.5, frozenset({"dense"})) for i in range(50)]
    line_cost = count_tokens(unit_line(cands[0].unit, cands[0].unit.summary)) + NEWLINE
    ctx = build_context("q", cands, theta=0.4, budget=line_cost * 3 + 1, full_text=full_text, raw_content=no_raw)
    assert len(ctx.hits) == 3
    assert ctx.tokens <= ctx.budget
    assert ctx.tokens == count_tokens(ctx.render())
    assert len(ctx.dropped) == 47


def test_level_two_is_spent_by_similarity_per_token():
    FULL["cheap"] = "short full text here"
    cands = [Candidate(unit("long", "I painted …"), 0.6, frozenset({"dense"})),
             Candidate(unit("cheap", "short …"), 0.5, frozenset({"dense"}))]
    base = sum(count_tokens(unit_line(c.unit, c.unit.summary)) + NEWLINE for c in cands)
    extra_cheap = count_tokens(unit_line(cands[1].unit, FULL["cheap"])) - count_tokens(unit_line(cands[1].unit, "short …"))
    ctx = build_context("q", cands, theta=0.4, budget=base + extra_cheap, full_text=full_text, raw_content=no_raw)
    levels = {h.unit.id: h.level for h in ctx.hits}
    assert levels == {"long": 1, "cheap": 2}
    assert ctx.tokens == count_tokens(ctx.render()) <= ctx.budget


def test_level_three_attaches_raw_content_within_budget():
    img = unit("img", "a photo of a red boat", Modality.IMAGE)

    def raw(u: MAU) -> RawContent | None:
        return RawContent("<image img.png 640x480>", "image/png", b"\x89PNG", tokens=85) if u.id == "img" else None

    cands = [Candidate(img, 0.7, frozenset({"dense"}))]
    ctx = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=raw)
    hit = ctx.hits[0]
    assert hit.level == 3 and hit.raw is not None and hit.raw.data == b"\x89PNG"
    assert ctx.tokens == count_tokens(ctx.render()) <= hit.tokens + NEWLINE
    tight = build_context("q", cands, theta=0.4, budget=hit.tokens - 1, full_text=full_text, raw_content=raw)
    assert tight.hits[0].level < 3


def test_session_packing_groups_by_session_under_one_header_and_counts_it_once():
    other = datetime(2023, 6, 1, 9, 0, tzinfo=timezone.utc)
    s1 = [MAU(f"a{i}", f"line {i} of the first session", Modality.TEXT, T, T, Scope("u", None, "s1"), f"h{i}",
              speaker="Mel") for i in range(3)]
    s2 = MAU("b", "a later session", Modality.TEXT, other, other, Scope("u", None, "s2"), "hb", speaker="Car")
    cands = [Candidate(s2, 0.9, frozenset()), *(Candidate(u, 0.5, frozenset()) for u in s1)]
    ctx = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw, packing="session")
    assert [h.unit.id for h in ctx.hits] == ["b", "a0", "a1", "a2"]  # hits stay in rank order
    assert ctx.render() == (
        "[2023-05-08 13:56]\nMel: line 0 of the first session\nMel: line 1 of the first session\n"
        "Mel: line 2 of the first session\n[2023-06-01 09:00]\nCar: a later session"
    )
    assert ctx.tokens == count_tokens(ctx.render())
    header = count_tokens("[2023-05-08 13:56]") + NEWLINE
    line = count_tokens("Mel: line 0 of the first session") + NEWLINE
    tight = build_context("q", [Candidate(u, 0.5, frozenset()) for u in s1], theta=0.4,
                          budget=header + 2 * line, full_text=full_text, raw_content=no_raw, packing="session")
    assert len(tight.hits) == 2 and tight.tokens == count_tokens(tight.render()) <= tight.budget


def test_non_english_text_is_counted_in_real_tokens_and_never_overflows():
    texts = ["我们上周末在杭州西湖边画了一幅日落的油画，天气非常好。" * 3,
             "Мы с сестрой ездили на дачу и собирали грибы всё утро.",
             "Wir haben am Wochenende die Straßenbahnhaltestelle neu gestrichen.",
             "🎨🌅🖌️ painted the sunset again 🎉🎉"]
    cands = [Candidate(unit(str(i), t), 0.5, frozenset({"dense"})) for i, t in enumerate(texts * 10)]
    for budget in (30, 100, 257, 1000):
        ctx = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw,
                            packing="session")
        assert ctx.tokens == count_tokens(ctx.render()) <= budget


def test_a_user_tokenizer_is_used_for_the_budget():
    def by_char(text: str) -> int:
        return len(text)

    cands = [Candidate(unit(str(i), f"memory {i}"), 0.5, frozenset({"dense"})) for i in range(20)]
    ctx = build_context("q", cands, theta=0.4, budget=120, full_text=full_text, raw_content=no_raw, count=by_char)
    assert ctx.tokens == len(ctx.render()) <= 120
    assert 0 < len(ctx.hits) < 20


def test_media_units_render_with_their_file_name_so_an_answer_can_name_them():
    img = MAU("img", "a red boat", Modality.IMAGE, T, T, Scope("u"), "hi", metadata={"filename": "D1_IMG_001.jpg"})
    ctx = build_context("q", [Candidate(img, 0.5, frozenset())], theta=0.4, budget=100, full_text=full_text,
                        raw_content=no_raw, max_level=2)
    assert ctx.render() == "[2023-05-08 13:56] (image D1_IMG_001.jpg) a red boat"


def test_best_hits_come_whole_before_summaries_of_many_others():
    """whole_share: the best hit's full text first, then summary lines fill the rest of the budget."""
    FULL["reply"] = "Here is the whole plan for the trip to Lisbon, day by day. " * 36
    cands = [Candidate(unit("reply", "Here is the whole plan for the trip …"), 0.3, frozenset({"dense"}))]
    cands += [Candidate(unit(f"s{i}", f"short memory number {i} about the weather"), 0.2, frozenset({"sparse"}))
              for i in range(60)]
    budget = 1000
    summaries = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw)
    assert FULL["reply"].strip() not in summaries.render()  # below theta, and the short lines took the budget
    whole = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw,
                          whole_share=0.7)
    assert whole.hits[0].unit.id == "reply" and whole.hits[0].level == 2
    assert FULL["reply"].strip() in whole.render()
    assert whole.hits[0].tokens > budget // 2  # it fits in 70% of the budget, not in half
    assert len(whole.hits) > 1  # summaries of the others fill the rest
    assert whole.tokens == count_tokens(whole.render()) <= budget
    half = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw,
                         whole_share=0.5)
    assert half.hits[0].level == 1  # too long for half the budget: its summary line, as before
    top = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw,
                        whole_share=0.5, whole_top=1)
    assert top.hits[0].unit.id == "reply" and top.hits[0].level == 2  # the best hit may use the whole budget
    assert FULL["reply"].strip() in top.render() and len(top.hits) > 1
    assert top.tokens == count_tokens(top.render()) <= budget
    tight = build_context("q", cands, theta=0.4, budget=400, full_text=full_text, raw_content=no_raw,
                          whole_share=0.5, whole_top=1)
    assert tight.hits[0].level == 1 and tight.tokens <= 400  # longer than the whole budget: its line


def test_day_packing_pays_a_time_once_per_change():
    """stamp_gap=1: one header per session and day, the time of day wherever the minute changes."""
    def at(uid: str, text: str, hour: int, minute: int, day: int = 8) -> Candidate:
        when = datetime(2023, 5, day, hour, minute, tzinfo=timezone.utc)
        return Candidate(MAU(uid, text, Modality.TEXT, when, when, Scope("u"), "h" + uid, speaker="Mel"), 0.5,
                         frozenset({"dense"}))

    cands = [at("c", "see you then", 9, 5), at("a", "morning!", 9, 1), at("b", "coffee at ten?", 9, 1),
             at("d", "back home", 18, 30, day=9)]
    day = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw, packing="day",
                        stamp_gap=1)
    assert day.render() == ("[2023-05-08 09:01]\nMel: morning!\nMel: coffee at ten?\n09:05 Mel: see you then\n"
                            "[2023-05-09 18:30]\nMel: back home")
    assert day.tokens == count_tokens(day.render())
    session = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw,
                            packing="session")
    assert session.render().count("[2023-05-08") == 2  # a header per distinct time
    assert day.tokens < session.tokens
    tight = build_context("q", cands, theta=0.4, budget=day.tokens - 1, full_text=full_text, raw_content=no_raw,
                          packing="day", stamp_gap=1)
    assert len(tight.hits) < 4 and tight.tokens == count_tokens(tight.render()) <= tight.budget
    shared = [at(uid, text, 13, 56) for uid, text in [("x", "hi"), ("y", "how are you?")]]
    same = {p: build_context("q", shared, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw,
                             packing=p).render() for p in ("day", "session")}
    assert same["day"] == same["session"] == "[2023-05-08 13:56]\nMel: hi\nMel: how are you?"


def test_turns_of_a_session_render_in_the_order_they_were_said():
    """Same session, same time: the written order (seq), not the rank order."""
    cands = [Candidate(unit(uid, text), 0.5, frozenset({"dense"}), seq=seq)
             for uid, text, seq in [("b", "a sunset over the lake", 2), ("c", "wow, lovely!", 3),
                                    ("a", "what did you paint?", 1)]]
    ctx = build_context("q", cands, theta=0.4, budget=1000, full_text=full_text, raw_content=no_raw,
                        packing="session")
    assert [h.unit.id for h in ctx.hits] == ["b", "c", "a"]  # the hits stay in rank order
    assert ctx.render() == "[2023-05-08 13:56]\nMel: what did you paint?\nMel: a sunset over the lake\nMel: wow, lovely!"


def test_a_long_text_not_shown_whole_says_a_brief_line_and_the_budget_goes_to_others():
    """line_words: the summary line of a longer text is cut to a few words; other lines are untouched."""
    words = " ".join(f"w{i}" for i in range(100))
    summary = words + " …"  # what ingest stores for a longer text without an LLM
    FULL["plan"] = words + " and then the rest of the very long reply " * 20
    plan = MAU("plan", summary, Modality.TEXT, T, T, Scope("u"), "hplan", speaker="assistant", raw_ref="ref")
    short = [Candidate(unit(f"s{i}", f"short memory number {i} about the weather"), 0.2, frozenset({"sparse"}))
             for i in range(40)]
    image = MAU("img", "a caption of many words " * 10, Modality.IMAGE, T, T, Scope("u"), "himg", raw_ref="png")
    cands = [Candidate(plan, 0.3, frozenset({"dense"})), Candidate(image, 0.25, frozenset({"dense"})), *short]
    budget = 300
    before = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw,
                           packing="session")
    brief = build_context("q", cands, theta=0.4, budget=budget, full_text=full_text, raw_content=no_raw,
                          packing="session", line_words=10)
    assert before.hits[0].text == f"assistant: {summary}"  # 0: the whole summary line, as before
    assert brief.hits[0].unit.id == "plan" and brief.hits[0].level == 1
    assert brief.hits[0].text == "assistant: w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 …"
    assert brief.hits[0].unit.summary == summary  # the unit itself (what is indexed) is unchanged
    shown = {h.unit.id: h.text for h in brief.hits}
    assert shown["img"] == "(image) " + "a caption of many words " * 10  # media: not cut
    assert len(brief.hits) > len(before.hits)  # the words saved hold more memories
    assert brief.tokens == count_tokens(brief.render()) <= budget
    whole = build_context("q", [Candidate(plan, 0.9, frozenset({"dense"}))], theta=0.4, budget=1000,
                          full_text=full_text, raw_content=no_raw, line_words=10)
    assert whole.hits[0].level == 2 and FULL["plan"].strip() in whole.render()  # level 2: the full text


def test_a_time_of_day_stamp_is_read_in_the_units_own_zone():
    """The same instant in two zones: each line says its own clock time (the stamps are remembered per time)."""
    from datetime import timedelta

    from omnimem.results import time_stamp

    utc = datetime(2023, 5, 8, 10, 0, tzinfo=timezone.utc)
    paris = utc.astimezone(timezone(timedelta(hours=2)))
    assert utc == paris  # equal instants compare (and hash) equal
    def at(when: datetime) -> MAU:
        return MAU("u", "x", Modality.TEXT, when, when, Scope("u"), "hu", speaker="Mel")

    assert time_stamp(at(utc)) == "10:00"
    assert time_stamp(at(paris)) == "12:00"
