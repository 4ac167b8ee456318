"""Deterministic synthetic memories for the performance benchmark.

``sessions(n)`` yields dialogue-like turns (names, places, dates, numbers,
topic words) grouped by user and session, the same for the same ``n`` and
seed on every machine, without holding them all in memory.
``BagOfWordsEmbedder`` gives them fast, deterministic vectors: each word maps
to a fixed random direction and a text is the normalised sum of its words, so
texts sharing words (a session's topic, a name) lie close together, the
clustered shape real embeddings have, at a millionth of a model's cost.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

import numpy as np

from omnimem.embed.base import Vectors, normalise

NAMES = (
    "Caroline Melanie Ann Dana Omar Priya Lukas Mei Tomas Aisha Jonas Sofia Ravi Elena Kwame Noor Felix Hana Diego "
    "Ingrid Yusuf Clara Mateo Leila Bruno Zara Nikolai Amara Theo Ines Kenji Freya Samir Lucia Arjun Maya Oskar "
    "Fatima Hugo Nadia"
).split()
PLACES = (
    "Berlin Lisbon the lake the gym the library Tokyo the farmers market Yosemite the office the beach Boston "
    "the museum the park Kyoto the cafe the hospital Denver the studio the mountains Seattle the garden Oslo "
    "the school the river Madrid the concert hall"
).split(" ")
NOUNS = (
    "painting pottery violin kayak garden novel recipe marathon camera puppy kitten bicycle guitar sculpture "
    "telescope podcast quilt chessboard sourdough tomato lantern journal sketchbook drone aquarium piano tent "
    "canoe scarf poem photograph mural bonsai vinyl record keyboard backpack jacket notebook candle teapot "
    "skateboard microscope hammock puzzle painting kite saxophone lemon tree beehive greenhouse trophy "
    "workshop ticket passport laptop sunflower fountain pen"
).split()
ADJECTIVES = (
    "red tiny huge old new quiet noisy bright dark gentle wild cozy rusty shiny handmade vintage colourful "
    "broken lovely strange heavy light warm cold fresh"
).split()
ACTIVITIES = (
    "hiking swimming painting running cycling camping baking climbing dancing sailing fishing knitting "
    "volunteering gardening reading singing surfing skiing rowing drawing"
).split()
EVENTS = "birthday wedding graduation picnic reunion festival tournament exhibition fundraiser retreat".split()
FEELINGS = "happy anxious proud excited tired grateful nervous calm curious relieved".split()

TEMPLATES = (
    "I went {act} with {name} near {place} last {day}; we talked about the {adj} {noun} and a {noun2}.",
    "{name} finally finished the {noun} for the {event} on {date}, it took {num} weeks.",
    "Did you know {name} bought {num} {adj} {noun}s at {place}? I was so {feel}.",
    "We are planning a {event} at {place} on {date}, maybe with {num} friends and a {noun}.",
    "My {noun} broke again, so {name} lent me a {adj} {noun2} until {date}.",
    "I have been feeling {feel} since the {event}; {act} at {place} helps a lot.",
    "{name} and I started {act} lessons in {month}, and the teacher has a {adj} {noun}.",
    "Remember the {adj} {noun} from {place}? {name} sold it for {num} dollars on {date}.",
)
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = "January February March April May June July August September October November December".split()
_WORD = re.compile(r"\w+")


def turn_text(rng: random.Random, topic: Sequence[str], when: datetime) -> str:
    """One dialogue turn; ``topic`` biases the nouns, so a session stays on its subject."""
    noun, noun2 = rng.choice(topic), rng.choice(topic if rng.random() < 0.7 else NOUNS)
    return rng.choice(TEMPLATES).format(
        act=rng.choice(ACTIVITIES), name=rng.choice(NAMES), place=rng.choice(PLACES), day=rng.choice(DAYS),
        adj=rng.choice(ADJECTIVES), noun=noun, noun2=noun2, event=rng.choice(EVENTS), num=rng.randint(2, 999),
        date=(when + timedelta(days=rng.randint(-400, 60))).strftime("%d %B %Y"), feel=rng.choice(FEELINGS),
        month=rng.choice(MONTHS),
    )


def users_for(n: int) -> int:
    """Users in a data set of ``n`` turns: about 1,000 turns each, at least 10."""
    return max(10, n // 1000)


def sessions(n: int, seed: int = 0) -> Iterator[tuple[str, str, list[dict[str, str]]]]:
    """``n`` turns as (user_id, session_id, turns), 10-30 turns per session, users interleaved."""
    rng = random.Random(seed)
    users = users_for(n)
    start = datetime(2022, 1, 1, 9, 0)
    made = 0
    number = 0
    while made < n:
        user = number % users
        size = min(n - made, rng.randint(10, 30))
        topic = rng.sample(NOUNS, 5)
        when = start + timedelta(hours=7 * number)
        speakers = rng.sample(NAMES, 2)
        turns = [
            {
                "text": turn_text(rng, topic, when),
                "speaker": speakers[i % 2],
                "time": (when + timedelta(minutes=i)).isoformat(),
                "id": f"D{number}:{i}",
            }
            for i in range(size)
        ]
        yield f"user-{user}", f"session-{number}", turns
        made += size
        number += 1


def queries(count: int, n: int, seed: int = 1) -> list[tuple[str, str]]:
    """(question, user_id) pairs over the same vocabulary as ``sessions(n)``."""
    rng = random.Random(seed)
    users = users_for(n)
    shapes = (
        "What did {name} say about the {noun}?",
        "When did we go {act} near {place}?",
        "Who bought the {adj} {noun} at {place}?",
        "How did I feel after the {event}?",
        "What happened with the {noun} and the {noun2} in {month}?",
    )
    out = []
    for _ in range(count):
        text = rng.choice(shapes).format(
            name=rng.choice(NAMES), noun=rng.choice(NOUNS), noun2=rng.choice(NOUNS), act=rng.choice(ACTIVITIES),
            place=rng.choice(PLACES), adj=rng.choice(ADJECTIVES), event=rng.choice(EVENTS), month=rng.choice(MONTHS),
        )
        out.append((text, f"user-{rng.randrange(users)}"))
    return out


class BagOfWordsEmbedder:
    """Deterministic vectors for synthetic text: the normalised sum of per-word random directions."""

    name = "synthetic-bow-384"

    def __init__(self, dim: int = 384, buckets: int = 1 << 14, seed: int = 7) -> None:
        self.dim = dim
        self._buckets = buckets
        self._table = np.random.default_rng(seed).standard_normal((buckets, dim)).astype(np.float32)
        self._rows: dict[str, int] = {}

    def _row(self, word: str) -> int:
        row = self._rows.get(word)
        if row is None:
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            row = self._rows[word] = int.from_bytes(digest, "little") % self._buckets
        return row

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rows = [self._row(w) for w in _WORD.findall(text.lower())]
            if rows:
                out[i] = self._table[rows].sum(axis=0)
        return normalise(out)
