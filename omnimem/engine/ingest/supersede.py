"""LLM-proposed supersession: does a new memory replace an earlier one?

"Melanie moved to Seattle" makes "Melanie lives in Boston" obsolete. When a
model is configured and ``auto_supersede`` is on, each new text unit is shown
to the model with the few most similar current units of the same user and
agent; the ones it says are corrected or made obsolete are superseded: kept
for history, withheld from search, and the decision is logged with the
model's reason. Nothing is ever deleted on a model's word.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from omnimem.llm.base import LLM, Message
from omnimem.mau import MAU
from omnimem.timeparse import format_time

PROMPT = (
    "You keep a person's memory consistent. You get one NEW memory and a numbered list of EARLIER memories. "
    "List the numbers of earlier memories that the new one corrects, updates or makes obsolete: it states a "
    "newer value of the same fact, or contradicts it. A memory that is merely related, or can still be true "
    "alongside the new one, is not replaced. Reply as JSON: {\"replaces\": [numbers], \"reason\": \"...\"}."
)


class SupersessionReply(BaseModel):
    replaces: list[int] = Field(default_factory=list)
    reason: str = ""


def messages(new: MAU, earlier: Sequence[MAU]) -> list[Message]:
    lines = [f"{i}. [{format_time(u.event_time)}] {u.speaker or ''}: {u.summary}" for i, u in enumerate(earlier, 1)]
    user = (
        f"NEW: [{format_time(new.event_time)}] {new.speaker or ''}: {new.summary}\n\nEARLIER:\n" + "\n".join(lines)
    )
    return [{"role": "system", "content": PROMPT}, {"role": "user", "content": user}]


def propose(llm: LLM, new: MAU, earlier: Sequence[MAU]) -> tuple[list[str], str]:
    """Ids of ``earlier`` units the model says ``new`` replaces, and its reason."""
    if not earlier:
        return [], ""
    reply = llm.complete_json(messages(new, earlier), SupersessionReply)
    chosen = [earlier[n - 1].id for n in dict.fromkeys(reply.replaces) if 1 <= n <= len(earlier)]
    return chosen, reply.reason.strip()
