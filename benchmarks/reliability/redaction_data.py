"""A labelled synthetic set of personal data in chat-like sentences, made the same way on every run.

:func:`examples` fills sentence templates with generated values (names,
emails, phone numbers in several national formats, Luhn-valid card numbers,
IBANs with valid check digits, account numbers, street addresses) and labels
each value's span with its kind; a share of the sentences holds no personal
data but the things a detector confuses with it (dates, times, prices,
versions, order numbers that fail the Luhn check, places and products). The
redaction benchmark and ``tests/engine/ingest/test_redact_quality.py`` read it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

FIRST = ["Caroline", "Melanie", "James", "Priya", "Mohammed", "Sofia", "Daniel", "Aisha", "Lucas", "Hannah",
         "Kenji", "Olivia", "Mateo", "Grace", "Ethan", "Fatima", "Noah", "Chloe", "Ravi", "Emma", "Liam", "Zoe",
         "Oliver", "Maria", "David", "Sarah", "Michael", "Laura", "Thomas", "Anna"]
LAST = ["Smith", "Johnson", "Patel", "Garcia", "Nguyen", "Kowalski", "Müller", "Rossi", "Okafor", "Tanaka",
        "Brown", "Williams", "Schmidt", "Dubois", "Hernandez", "Kim", "Andersson", "O'Brien", "Novak", "Silva"]
STREETS = ["Baker", "Maple", "Oak", "High", "Church", "Elm", "Park", "Victoria", "Station", "Mill", "Cedar",
           "King", "Queen", "Willow", "Harbour View"]
STREET_TYPES = ["Street", "Avenue", "Road", "Lane", "Drive", "Close", "Court", "Way", "Place", "Boulevard"]
CITIES = ["Springfield", "London", "Manchester", "Portland", "Austin", "Leeds", "Boston", "Denver", "Bristol"]
DOMAINS = ["example.com", "mail.example.org", "example.net", "corp.example.co.uk"]
US_STATES = ["IL", "OR", "TX", "MA", "CO", "NY", "CA"]

TEMPLATES = [
    "You can email me at {EMAIL} anytime.",
    "My new number is {PHONE}, save it before Friday.",
    "{PERSON} said she would pay with the card {CARD}.",
    "Please wire the deposit to {IBAN} by the end of the month.",
    "We finally moved to {ADDRESS} last spring and love the garden.",
    "My account number is {ACCOUNT} at the credit union downtown.",
    "I had lunch with {PERSON} and {PERSON} yesterday, it was lovely.",
    "Ask {PERSON} for the keys; her mobile is {PHONE}.",
    "Send the invoice to {EMAIL} and copy {PERSON} on it.",
    "The parcel for {PERSON} should go to {ADDRESS}.",
    "If the bank asks, the card ending the long way is {CARD} and the IBAN is {IBAN}.",
    "Text me on {PHONE} when you land, {PERSON} will pick you up.",
    "{PERSON} from the book club lives at {ADDRESS} now.",
    "Transfer it from acct {ACCOUNT} please, not the savings one.",
    "I think {PERSON} changed her email to {EMAIL} after the wedding.",
    "Call the office at {PHONE} and ask for {PERSON}.",
    "Yesterday {PERSON} told me about her trip to the mountains.",
    "Remind me to thank {PERSON} for the birthday present.",
]
NEGATIVES = [
    "The meeting is on {DATE} at {TIME} in room {ROOM}.",
    "I paid ${PRICE} for the flight to Paris last week.",
    "Order {ORDER} was delayed again, the shop said two more days.",
    "I ran {KM} km in {MIN} minutes on Saturday morning.",
    "Version {VERSION} fixed the bug we saw back in {YEAR}.",
    "We sold {COUNT} units in Q3, up {PCT} percent on last year.",
    "The train leaves platform {ROOM} at {TIME} and arrives around noon.",
    "My sister adopted a puppy and named it after a Star Wars character.",
    "I started painting again after reading a book about the gardens of Provence.",
    "The Python meetup moved to the library on Thursday evenings.",
    "We watched three episodes of the new series and went to bed at {TIME}.",
    "Ticket {TICKET} covers the concert on {DATE}.",
    "The recipe needs 250 g of flour, 2 eggs and 100 ml of milk.",
    "Between {YEAR} and {YEAR2} the population grew by {COUNT} people.",
]


@dataclass(frozen=True, slots=True)
class Example:
    """A sentence and the labelled spans of personal data in it (``(start, end, kind)``)."""

    text: str
    spans: tuple[tuple[int, int, str], ...]


def luhn_digit(body: str) -> str:
    """The check digit that makes ``body + digit`` pass the Luhn check."""
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def iban(country: str, bban: str) -> str:
    """An IBAN with valid check digits, in groups of four."""
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(ch, 36)) for ch in moved)) % 97
    compact = f"{country}{check:02d}{bban}"
    return " ".join(compact[i:i + 4] for i in range(0, len(compact), 4))


def _value(kind: str, rng: random.Random) -> str:
    def digits(n: int) -> str:
        return "".join(rng.choice("0123456789") for _ in range(n))

    if kind == "PERSON":
        return rng.choice(FIRST) if rng.random() < 0.4 else f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind == "EMAIL":
        first, last = rng.choice(FIRST).lower(), rng.choice(LAST).lower().replace("'", "").replace("ü", "u")
        local = rng.choice([f"{first}.{last}", f"{first}{rng.randint(1, 99)}", f"{first[0]}{last}", f"{first}_{last}"])
        return f"{local}@{rng.choice(DOMAINS)}"
    if kind == "PHONE":
        area, mid, end = digits(3).replace("0", "4", 1), digits(3), digits(4)
        return rng.choice([f"({area}) {mid}-{end}", f"{area}-{mid}-{end}", f"+1 {area} {mid} {end}",
                           f"+44 20 {digits(4)} {digits(4)}", f"07{digits(3)} {digits(6)}", f"555-{end}",
                           f"{area}.{mid}.{end}", f"+49 30 {digits(8)}"])
    if kind == "CARD":
        prefix, length = rng.choice([("4", 16), ("51", 16), ("55", 16), ("37", 15), ("6011", 16)])
        body = prefix + digits(length - len(prefix) - 1)
        number = body + luhn_digit(body)
        sep = rng.choice([" ", "-", ""])
        groups = [number[:4], number[4:10], number[10:]] if length == 15 else [number[i:i + 4] for i in (0, 4, 8, 12)]
        return sep.join(groups)
    if kind == "IBAN":
        return rng.choice([iban("GB", f"{rng.choice(['WEST', 'NWBK', 'BARC'])}{digits(14)}"),
                           iban("DE", digits(18)), iban("FR", digits(23)), iban("NL", f"ABNA{digits(10)}")])
    if kind == "ACCOUNT":
        return rng.choice([digits(8), digits(10), f"{digits(4)} {digits(4)}", f"{digits(3)}-{digits(6)}"])
    if kind == "ADDRESS":
        street = f"{rng.randint(1, 2400)} {rng.choice(STREETS)} {rng.choice(STREET_TYPES)}"
        return rng.choice([street, f"{street}, {rng.choice(CITIES)}",
                           f"{street}, {rng.choice(CITIES)}, {rng.choice(US_STATES)} {digits(5)}",
                           f"{street}, {rng.choice(CITIES)} {rng.choice(['NW1', 'M4', 'BS8', 'LS6'])} "
                           f"{rng.randint(1, 9)}{rng.choice(['XE', 'AB', 'QT', 'HJ'])}",
                           f"{street}, Apt {rng.randint(1, 40)}"])
    raise ValueError(kind)


def _negative_value(slot: str, rng: random.Random) -> str:
    if slot == "ORDER":  # 16 digits that fail the Luhn check: not a card
        body = "".join(rng.choice("0123456789") for _ in range(15))
        bad = str((int(luhn_digit(body)) + rng.randint(1, 9)) % 10)
        number = body + bad
        return " ".join(number[i:i + 4] for i in (0, 4, 8, 12))
    values = {
        "DATE": lambda: rng.choice([f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                                    f"{rng.randint(1, 28)}/{rng.randint(1, 12)}/2024", "May 7, 2023"]),
        "TIME": lambda: f"{rng.randint(7, 22)}:{rng.choice(['00', '15', '30', '45'])}",
        "ROOM": lambda: str(rng.randint(1, 420)),
        "PRICE": lambda: f"{rng.randint(100, 4000):,}.{rng.randint(0, 99):02d}",
        "KM": lambda: str(rng.randint(3, 42)),
        "MIN": lambda: str(rng.randint(15, 300)),
        "VERSION": lambda: f"{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "YEAR": lambda: str(rng.randint(1990, 2024)),
        "YEAR2": lambda: str(rng.randint(2025, 2030)),
        "COUNT": lambda: f"{rng.randint(1000, 90000):,}",
        "PCT": lambda: str(rng.randint(2, 40)),
        "TICKET": lambda: f"TK-{rng.randint(100000, 999999)}",
    }
    return values[slot]()


_SLOT = re.compile(r"\{([A-Z0-9]+)\}")


def _fill(template: str, rng: random.Random, labelled: bool) -> Example:
    out, spans, at = [], [], 0
    length = 0
    for m in _SLOT.finditer(template):
        out.append(template[at:m.start()])
        length += m.start() - at
        slot = m.group(1)
        value = _value(slot, rng) if labelled else _negative_value(slot, rng)
        if labelled:
            spans.append((length, length + len(value), slot))
        out.append(value)
        length += len(value)
        at = m.end()
    out.append(template[at:])
    return Example("".join(out), tuple(spans))


def examples(count: int = 600, *, seed: int = 53, negative_share: float = 0.3) -> list[Example]:
    """``count`` labelled sentences (about ``negative_share`` of them with no personal data), the same for a seed."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        if rng.random() < negative_share:
            made.append(_fill(rng.choice(NEGATIVES), rng, labelled=False))
        else:
            made.append(_fill(rng.choice(TEMPLATES), rng, labelled=True))
    return made
