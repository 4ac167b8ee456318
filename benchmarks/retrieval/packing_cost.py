"""What time stamps cost when every message carries its own time: turns per 1,000 tokens against a plain list.

Real chat logs stamp each message; LoCoMo, LongMemEval and Mem-Gallery give a
whole session one time, so their recall cannot show it. Two synthetic chats
are searched under each rendering:

- ``templated`` (:mod:`benchmarks.harness.synthetic`): 10-30 long templated turns a
  session, a turn a minute;
- ``short``: short messages (2-10 words) in bursts, 0-3 minutes apart within
  a burst, the bursts 20 minutes to 9 hours apart, so a day holds several
  conversations, as in real chat logs.

Renderings: ``session`` (a ``[time]`` header per session and time, so nearly
one per turn), ``day`` with ``stamp_gap=1`` (one header per session and day,
a line's time of day wherever the minute changes: the rendering before the
setting) and ``day`` with larger gaps (a time of day only where the
conversation resumes after that many minutes), these with every line naming
its speaker (``elide_speakers=False``), then ``day`` with
``elide_speakers`` (a line that goes on, unstamped, from the same speaker
leaves out ``speaker: ``) and ``day auto``, the defaults (``"auto"``: the
same where the two lines carry times of their own, as these chats' messages
do). Every search reads as deep as its budget needs (``depth=0``: deeper
where short messages run out of candidates first). Each context's hits are also
rendered as the plain list a caller would write by hand, one ``speaker:
text`` line per hit and nothing else, counted in real cl100k tokens by the
project's counter (:func:`omnimem.tokens.count_tokens`): the same hits, so
only the rendering differs::

    python -m benchmarks packing-cost --out benchmarks/results/packing-cost.json

``turns/1k`` is hits per 1,000 tokens of the rendered context, ``plain/1k``
that of the plain list of the same hits, ``ratio`` the first over the second.
``repeated`` counts the tokens of ``speaker: `` prefixes on lines that go on
from a line of the same speaker without a time stamp: what
``elide_speakers`` leaves out of the renderings without it, and
``ratio-rep`` the ratio without them.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks.harness.synthetic import ACTIVITIES, NAMES, NOUNS, PLACES, queries, sessions
from omnimem import Context, Memory
from omnimem.tokens import count_tokens

RENDERINGS: dict[str, dict[str, object]] = {  # "day auto": the defaults (stamp_gap=30, elide_speakers="auto")
    "session": {"packing": "session"},
    "day stamp_gap=1": {"packing": "day", "stamp_gap": 1, "elide_speakers": False},  # the rendering before stamp_gap
    "day stamp_gap=15": {"packing": "day", "stamp_gap": 15, "elide_speakers": False},
    "day": {"packing": "day", "elide_speakers": False},  # every line names its speaker: the default before "auto"
    "day stamp_gap=60": {"packing": "day", "stamp_gap": 60, "elide_speakers": False},
    "day elide_speakers": {"packing": "day", "elide_speakers": True},
    "day elide_speakers stamp_gap=60": {"packing": "day", "stamp_gap": 60, "elide_speakers": True},
    "day auto": {"packing": "day"},
}
BUDGETS = (1000, 6000)
SHORT = (
    "ok", "haha yes", "see you at {place}", "did you bring the {noun}?", "{name} says hi", "omw", "lol",
    "going {act} later", "the {noun} is broken again", "miss you", "can't, at {place}", "sure!", "which {noun}?",
    "back from {act}", "{name} is coming too", "good night", "call me", "just landed in {place}", "yes please",
    "how was {act}?", "love the {noun}", "running late", "who has the {noun}?", "at {place} now",
)


def short_chats(turns: int, seed: int = 5) -> Iterator[tuple[str, str, list[dict[str, str]]]]:
    """``turns`` short messages as (user_id, session_id, turns): 10 chats, one session each, in bursts."""
    rng = random.Random(seed)
    chats = 10
    for chat in range(chats):
        names = rng.sample(NAMES, 2)
        when = datetime(2024, 3, 1, 8, 0, tzinfo=timezone.utc) + timedelta(hours=rng.randint(0, 12))
        out = []
        for i in range(turns // chats):
            if i and rng.random() < 0.15:  # a pause: the conversation resumes later the same day or after it
                when += timedelta(minutes=rng.randint(20, 540))
            else:
                when += timedelta(minutes=rng.choice((0, 0, 1, 1, 2, 3)), seconds=rng.randint(0, 59))
            text = rng.choice(SHORT).format(place=rng.choice(PLACES), noun=rng.choice(NOUNS),
                                            name=rng.choice(NAMES), act=rng.choice(ACTIVITIES))
            speaker = names[0] if rng.random() < 0.5 else names[1]
            out.append({"text": text, "speaker": speaker, "time": when.isoformat(), "id": f"C{chat}:{i}"})
        yield f"user-{chat}", f"chat-{chat}", out


def short_queries(count: int, seed: int = 6) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    shapes = ("Who has the {noun}?", "When was {name} at {place}?", "Did they go {act}?", "What broke, the {noun}?")
    return [(rng.choice(shapes).format(noun=rng.choice(NOUNS), name=rng.choice(NAMES), place=rng.choice(PLACES),
                                      act=rng.choice(ACTIVITIES)), f"user-{rng.randrange(10)}") for _ in range(count)]


def plain_tokens(ctx: Context) -> int:
    """The same hits as a plain list: one ``speaker: text`` line each, in rank order, nothing else."""
    return count_tokens("\n".join(hit.render() for hit in ctx.hits))


def repeated_speakers(ctx: Context) -> int:
    """Tokens of the ``speaker: `` prefixes that repeat the speaker of the line above, in one group, unstamped."""
    saved, above = 0, None
    for line in ctx.lines():
        if line.startswith("["):
            above = None
            continue
        speaker = line.split(": ", 1)[0] if ": " in line else None
        if speaker is not None and speaker == above and not speaker[:2].isdigit():
            saved += count_tokens(line) - count_tokens(line[len(speaker) + 2:])
        above = speaker
    return saved


def measure_chat(chat: str, turns: int, count: int) -> dict[str, dict[str, float]]:
    corpus = short_chats(turns) if chat == "short" else sessions(turns)
    dialogues = list(corpus)
    asked = short_queries(count) if chat == "short" else queries(count, turns)
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="omnimem-packing-") as folder:
        for n, (name, options) in enumerate(RENDERINGS.items()):
            with Memory(Path(folder) / str(n), embedder="fake-exact", **options) as mem:
                for user, session, dialogue in dialogues:
                    mem.add_dialogue(dialogue, user_id=user, session_id=session)
                for budget in BUDGETS:
                    hits, tokens, plain, headers, stamps, repeated, over = [], [], [], [], [], [], 0
                    cpu: list[float] = []
                    for text, user in asked:
                        mem.search(text, budget=budget, user_id=user)  # warm: the rows' line costs learnt
                        start = time.process_time()
                        ctx = mem.search(text, budget=budget, user_id=user)
                        cpu.append(time.process_time() - start)
                        lines = ctx.lines()
                        hits.append(len(ctx.hits))
                        tokens.append(ctx.tokens)
                        plain.append(plain_tokens(ctx))
                        repeated.append(repeated_speakers(ctx))
                        headers.append(sum(line.startswith("[") for line in lines))
                        stamps.append(sum(line[:2].isdigit() and line[2:3] == ":" for line in lines))
                        over += ctx.tokens > budget or ctx.tokens != count_tokens(ctx.render())
                    per_1k = 1000 * sum(hits) / max(sum(tokens), 1)
                    plain_1k = 1000 * sum(hits) / max(sum(plain), 1)
                    rows[f"{name} {budget}"] = {
                        "hits": statistics.mean(hits), "tokens": statistics.mean(tokens),
                        "plain_tokens": statistics.mean(plain), "header_lines": statistics.mean(headers),
                        "stamped_lines": statistics.mean(stamps), "turns_per_1k": per_1k,
                        "plain_turns_per_1k": plain_1k, "ratio": per_1k / plain_1k if plain_1k else 0.0,
                        "tokens_per_hit": sum(tokens) / max(sum(hits), 1),
                        "repeated_speaker_tokens": statistics.mean(repeated),
                        "ratio_without_repeated": sum(plain) / max(sum(tokens) - sum(repeated), 1),
                        "over_budget_or_miscounted": over,
                        "search_cpu_ms_p50": round(statistics.median(cpu) * 1000, 3),
                    }
    return rows


def measure(turns: int, count: int) -> dict[str, object]:
    return {"turns": turns, "queries": count, "embedder": "fake-exact", "short_rows": measure_chat("short", turns, count),
            "rows": measure_chat("templated", turns, count)}


def table(data: dict[str, object], chat: str) -> str:
    rows = data["short_rows" if chat == "short" else "rows"]
    assert isinstance(rows, dict)
    lines = [f"| {chat} chat: rendering, budget | hits | tokens | header lines | stamped lines | turns/1k | plain/1k | "
             "ratio | repeated | ratio-rep | over | CPU ms |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['hits']:.1f} | {row['tokens']:.0f} | {row['header_lines']:.1f} | "
                     f"{row['stamped_lines']:.1f} | {row['turns_per_1k']:.1f} | {row['plain_turns_per_1k']:.1f} | "
                     f"{row['ratio']:.3f} | {row['repeated_speaker_tokens']:.0f} | "
                     f"{row['ratio_without_repeated']:.3f} | {row['over_budget_or_miscounted']} | "
                     f"{row['search_cpu_ms_p50']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks packing-cost",
                                     description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = measure(args.turns, args.queries)
    data["command"] = f"python -m benchmarks packing-cost --turns {args.turns} --queries {args.queries} --out {args.out}"
    data["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    md = args.out.with_suffix(".md")
    md.write_text(f"# Time stamps per message vs where the conversation resumes\n\n`{data['command']}`\n\n"
                  f"Two synthetic chats of {data['turns']} turns each (`short`: 2-10-word messages in bursts, "
                  f"0-3 minutes apart, the bursts 20 minutes to 9 hours apart; `templated`: long turns a minute "
                  f"apart), {data['queries']} user-scoped queries each, the same ranking under every rendering. "
                  f"`plain/1k` renders the same hits as one `speaker: text` line each and nothing else (real cl100k "
                  f"tokens); `ratio` is `turns/1k` over `plain/1k`; `repeated` the tokens of `speaker: ` prefixes "
                  f"that repeat the speaker of the unstamped line above (what leaving them out could "
                  f"save at most, what `elide_speakers` leaves out) and `ratio-rep` the ratio without them; `over` "
                  f"counts contexts over their budget or whose token count differs from their rendered text's; "
                  f"`CPU ms` a search's CPU time, p50, asked a second time (its rows' line costs learnt); `day "
                  f"auto` is the default (`stamp_gap=30`, `elide_speakers=\"auto\"`: a line that goes on, unstamped, "
                  f"from its speaker under a line of another time leaves out the name), `day` the same with every "
                  f"name written (`elide_speakers=False`, the default before), `day stamp_gap=1` the rendering before "
                  f"the stamp setting, `day elide_speakers` with `elide_speakers=True`. A search reads as deep as its "
                  f"budget needs (short messages: deeper than `budget // 20`).\n\n{table(data, 'short')}\n\n"
                  f"{table(data, 'templated')}\n", encoding="utf-8")
    print(md.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
