"""A ranking signal of your own: registered as provider kind ``signal``, switched on by the ``signals`` setting.

The signal reads the search's best candidates as units, in the ranking's order, and names the ones it prefers;
its list re-orders the ranking at its weight, whichever ranking (learnt or rules) made it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from omnimem import Memory
from omnimem.contract.providers import Registry, register_provider
from omnimem.errors import ConfigError
from omnimem.mau import MAU

TEAS = [("I drink green tea every morning", "2024-01-01"), ("I drink black tea every evening", "2024-03-01"),
        ("I drink mint tea at noon", "2024-06-01")]
QUESTION = "which tea do I drink"


class Oldest:
    """Prefers what was said first; records what it was shown."""

    name = "oldest"
    seen: list[list[str]] = []

    def rank(self, query: str, units: Sequence[MAU]) -> list[str]:
        Oldest.seen.append([u.summary for u in units])
        return [u.id for u in sorted(units, key=lambda u: u.event_time or u.record_time)]


class Broken:
    name = "broken"

    def rank(self, query: str, units: Sequence[MAU]) -> object:
        return 42


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    register_provider("signal", "oldest", Oldest, replace=True)
    register_provider("signal", "broken", Broken, replace=True)
    Oldest.seen = []
    yield


def teas(tmp_path: Path, **settings: object) -> list[str]:
    with Memory(tmp_path / f"store-{len(list(tmp_path.iterdir()))}", embedder="fake", **settings) as memory:
        for text, when in TEAS:
            memory.add(text, user_id="u", time=when)
        return [hit.unit.summary for hit in memory.search(QUESTION, user_id="u").hits]


@pytest.mark.parametrize("ranking", ["learnt", "rules"])
def test_a_signal_re_orders_the_ranking_it_is_given(tmp_path: Path, ranking: str) -> None:
    plain = teas(tmp_path, ranking=ranking)
    assert plain[0] == "I drink mint tea at noon"
    assert Oldest.seen == []  # not named in the settings: never asked

    ordered = teas(tmp_path, ranking=ranking, signals={"oldest": 5})

    assert ordered == ["I drink green tea every morning", "I drink black tea every evening",
                       "I drink mint tea at noon"]
    assert Oldest.seen == [plain]  # the candidates as units, in the ranking's order, once per search


def test_a_signal_reads_at_most_signal_depth_candidates(tmp_path: Path) -> None:
    teas(tmp_path, signals="oldest:1", signal_depth=2)
    assert [len(seen) for seen in Oldest.seen] == [2]


def test_the_setting_is_checked_when_the_memory_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for spec, message in [("oldest", "not name:weight"), ("oldest:-1", "positive weight"),
                          ("oldest:1,oldest:2", "named twice"), ("nope:1", "unknown ranking signal provider 'nope'")]:
        with pytest.raises(ConfigError, match=message):
            Memory(tmp_path / "store", embedder="fake", signals=spec)
    with pytest.raises(ConfigError, match="need fusion='rrf'"):
        Memory(tmp_path / "store", embedder="fake", signals="oldest:1", fusion="union")
    monkeypatch.setenv("OMNIMEM_SIGNALS", "oldest:2.5")
    with Memory(tmp_path / "store", embedder="fake") as memory:
        assert memory.settings is not None and memory.settings.signals == "oldest:2.5"


def test_a_signal_that_answers_no_list_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", embedder="fake", signals={"broken": 1}) as memory:
        added = memory.add("I drink green tea every morning", user_id="u")
        with pytest.raises(ConfigError, match="'broken' must return a sequence of unit ids, not int"):
            memory.search(QUESTION, user_id="u")
        assert added.id is not None and memory.get(added.id) is not None  # nothing stored is lost



def test_an_unknown_signal_says_what_is_registered_and_the_store_keeps_its_memories(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", embedder="fake") as memory:
        memory.add("I drink green tea every morning", user_id="u")
    with pytest.raises(ConfigError, match=r"unknown ranking signal provider 'nope'; registered: broken, oldest"):
        Memory(tmp_path / "store", embedder="fake", signals="nope:1")
    with pytest.raises(ConfigError, match=r"registered: none$"):
        Registry(plugins=False).create("signal", "nope")
    with Memory(tmp_path / "store", embedder="fake") as memory:
        assert [h.unit.summary for h in memory.search(QUESTION, user_id="u").hits] == [
            "I drink green tea every morning"]
