"""A hypothesis state machine over the governance API, checked against a plain Python model.

Steps: add, update, supersede (add with ``supersedes``), delete, forget a user
or a session, search, and reopen (close and open the same folder). After every
step: the store holds exactly the model's units with the model's supersession,
``stats()["units"]`` and both index sizes equal the model's count, and every
search returns only live units of the asked scope, withholds superseded units
unless ``include_superseded``, and finds the unit whose unique token it asked for.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from omnimem import Memory, NotFoundError, Scope

USERS = ("ann", "bob", "cy")
SESSIONS = (None, "s1", "s2")
WORDS = ("kayak", "garden", "piano", "recipe", "violin", "museum", "coffee", "winter", "harbor", "meadow")


@dataclass
class Unit:
    user: str
    session: str | None
    token: str
    superseded_by: str | None = None

    @property
    def superseded(self) -> bool:
        return self.superseded_by is not None


class GovernanceMachine(RuleBasedStateMachine):
    steps_run = 0
    runs = 0

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="omnimem-state-"))
        self.mem = Memory(self.folder / "mem", embedder="fake")
        self.units: dict[str, Unit] = {}
        self.counter = 0
        type(self).runs += 1

    def teardown(self) -> None:
        self.mem.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- helpers -------------------------------------------------------------------------
    def _text(self, user: str, words: list[str]) -> tuple[str, str]:
        self.counter += 1
        token = f"tok{self.counter}"
        return token, f"owner{user} {token} {' '.join(words)}"

    def _pick(self, index: int, *, active_only: bool) -> str:
        # insertion order, not the ids: ids are random, and hypothesis replays a run step by step
        ids = [uid for uid, u in self.units.items() if not (active_only and u.superseded)]
        return ids[index % len(ids)]

    def _gone(self, ids: set[str]) -> None:
        """Units removed: what they replaced is now replaced by their surviving successor, or current again."""
        successor = {uid: self.units.pop(uid).superseded_by for uid in ids}
        for unit in self.units.values():
            while unit.superseded_by in successor:
                unit.superseded_by = successor[unit.superseded_by]

    def _has(self, *, active_only: bool) -> bool:
        return any(not (active_only and u.superseded) for u in self.units.values())

    # -- rules ---------------------------------------------------------------------------
    @rule(user=st.sampled_from(USERS), session=st.sampled_from(SESSIONS),
          words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
    def add(self, user: str, session: str | None, words: list[str]) -> None:
        token, text = self._text(user, words)
        res = self.mem.add(text, user_id=user, session_id=session)
        assert res.accepted or res.reason.startswith("redundant"), res
        if res.accepted:
            self.units[str(res.id)] = Unit(user, session, token)

    @precondition(lambda self: self._has(active_only=True))
    @rule(index=st.integers(0, 1000), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
    def update(self, index: int, words: list[str]) -> None:
        old = self._pick(index, active_only=True)
        token, text = self._text(self.units[old].user, words)
        res = self.mem.update(old, text=text)
        if res.accepted:
            self.units[old].superseded_by = str(res.id)
            self.units[str(res.id)] = Unit(self.units[old].user, self.units[old].session, token)

    @precondition(lambda self: self._has(active_only=True))
    @rule(index=st.integers(0, 1000), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
    def supersede(self, index: int, words: list[str]) -> None:
        old = self._pick(index, active_only=True)
        unit = self.units[old]
        token, text = self._text(unit.user, words)
        res = self.mem.add(text, user_id=unit.user, session_id=unit.session, supersedes=[old])
        if res.accepted:
            unit.superseded_by = str(res.id)
            self.units[str(res.id)] = Unit(unit.user, unit.session, token)

    @precondition(lambda self: self._has(active_only=False))
    @rule(index=st.integers(0, 1000))
    def delete(self, index: int) -> None:
        uid = self._pick(index, active_only=False)
        self.mem.delete(uid)
        self._gone({uid})

    @rule()
    def delete_missing(self) -> None:
        with pytest.raises(NotFoundError):
            self.mem.delete("0" * 32)

    @rule(user=st.sampled_from(USERS))
    def forget_user(self, user: str) -> None:
        chosen = [uid for uid, u in self.units.items() if u.user == user]
        assert self.mem.forget(user_id=user) == len(chosen)
        self._gone(set(chosen))

    @rule(user=st.sampled_from(USERS), session=st.sampled_from(SESSIONS[1:]))
    def forget_session(self, user: str, session: str) -> None:
        chosen = [uid for uid, u in self.units.items() if u.user == user and u.session == session]
        assert self.mem.forget(user_id=user, session_id=session) == len(chosen)
        self._gone(set(chosen))

    @rule(index=st.integers(0, 1000), include_superseded=st.booleans(),
          scope=st.sampled_from(("none", "user", "session", "other")), words=st.lists(st.sampled_from(WORDS), max_size=2))
    def search(self, index: int, include_superseded: bool, scope: str, words: list[str]) -> None:
        target = self._pick(index, active_only=False) if self.units else None
        unit = self.units[target] if target else Unit(USERS[index % 3], None, "nothing")
        where: dict[str, Any] = {
            "none": {}, "user": {"user_id": unit.user}, "other": {"user_id": USERS[(USERS.index(unit.user) + 1) % 3]},
            "session": {"user_id": unit.user, "session_id": unit.session or "s1"},
        }[scope]
        hits = self.mem.search(" ".join([unit.token, *words]), include_superseded=include_superseded, **where).hits
        for hit in hits:
            got = self.units.get(hit.unit.id)
            assert got is not None, f"search returned {hit.unit.id}, which was deleted or forgotten"
            assert all(where.get(k) in (None, v) for k, v in (("user_id", got.user), ("session_id", got.session)))
            assert include_superseded or not got.superseded, "a superseded unit came back in default search"
        visible = target is not None and (include_superseded or not unit.superseded)
        if visible and all(where.get(k) in (None, v) for k, v in (("user_id", unit.user), ("session_id", unit.session))):
            assert target in [h.unit.id for h in hits], "the unit whose token was searched was not found"

    @rule()
    def reopen(self) -> None:
        self.mem.close()
        self.mem = Memory(self.folder / "mem")

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def store_matches_model(self) -> None:
        type(self).steps_run += 1
        linked = {u.id: u.superseded_by for u in self.mem.store.get(self.mem.store.ids_in_scope(Scope()))}
        assert set(linked) == set(self.units)
        assert {uid for uid, sup in linked.items() if sup} == {uid for uid, u in self.units.items() if u.superseded}
        assert linked == {uid: u.superseded_by for uid, u in self.units.items()}
        n = len(self.units)
        assert self.mem.stats()["units"] == n
        assert self.mem.indexes.sizes() == {"dense": n, "sparse": n}


def test_governance_state_machine(sizes: Any, reliability_report: dict[str, Any]) -> None:
    GovernanceMachine.steps_run = GovernanceMachine.runs = 0
    case = GovernanceMachine.TestCase
    case.settings = settings(
        max_examples=sizes.examples, stateful_step_count=sizes.steps, deadline=None, derandomize=True,
        database=None, suppress_health_check=[HealthCheck.too_slow],
    )
    case("runTest").runTest()
    reliability_report["state_machine"] = {
        "runs": GovernanceMachine.runs, "checked_steps": GovernanceMachine.steps_run,
        "max_examples": sizes.examples, "stateful_step_count": sizes.steps, "failures": 0,
    }
