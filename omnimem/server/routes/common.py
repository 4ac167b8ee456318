"""What every route module uses: the app's Memory, the caller's scope from the query, the audit actor."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from fastapi import Query, Request

from omnimem.contract.caller import acting_as, writing_via
from omnimem.server.auth import Principal, state_of

if TYPE_CHECKING:
    from omnimem.memory import LocalMemory


def memory_of(request: Request) -> LocalMemory:
    return state_of(request).memory


@contextmanager
def acting(principal: Principal) -> Iterator[None]:
    """Calls inside are logged with the principal's actor (``key:<name>``); their writes arrive over ``http``,
    trusted at most as the principal's key allows."""
    with acting_as(principal.actor), writing_via("http", principal.max_trust):
        yield


class ScopeQuery:
    """``user_id``, ``agent_id``, ``session_id`` from the query string."""

    def __init__(self, user_id: str | None = Query(None), agent_id: str | None = Query(None),
                 session_id: str | None = Query(None)) -> None:
        self.user_id, self.agent_id, self.session_id = user_id, agent_id, session_id

    def bound(self, principal: Principal) -> dict[str, Any]:
        return principal.scope(self.user_id, self.agent_id, self.session_id)
