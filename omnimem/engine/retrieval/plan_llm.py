"""The LLM planner: SimpleMem's intent-aware retrieval planning, bounded.

One model call analyses the question and expands it into search queries; they are searched in
parallel with the question and fused (:mod:`.planner`); a second call checks whether the context
found can answer the question and, if not, names what to search next, for at most
``plan_rounds`` more rounds. Hard caps hold per search: ``plan_calls`` model calls,
``plan_tokens`` prompt + completion tokens (a call that could pass the cap is not made), and
``plan_deadline`` seconds, after which the best context so far is returned; the deadline covers the
provider's wait for a request slot, the request (one attempt, no retries) and the parse of the reply,
which is cut near its token cap and parsed in linear time. Tokens count as the larger of the provider's
report and the local count, never below 0. A model that fails,
times out or answers something that is not the JSON asked for ends planning there: the context
of the rounds so far comes back (at least the question's own search), and ``Context.plan.note``
says what happened. No model configured is an error (``ConfigError``), never a silent fallback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from omnimem.errors import ConfigError, OmnimemError
from omnimem.engine.retrieval.planner import Rounds
from omnimem.llm.base import LLM, Completion, Message, call_deadline, reply_bound
from omnimem.llm.structured import drop_think_blocks, json_values
from omnimem.results import Context, Plan

T = TypeVar("T")

MAX_QUERIES = 3  # queries one call may add
REPLY_TOKENS = 200  # max_tokens of each call (capped further by what the token cap leaves)
CHECK_CONTEXT_TOKENS = 1500  # of the context found, what the adequacy check reads at most
ANALYSE = (
    "You plan searches over a memory of past conversations. Read the question, say what its answer needs "
    "(people, things, events, times, or several pieces to combine), and write up to {n} short search "
    "queries that together would find every piece of evidence. Reply with JSON only: "
    '{{"needs": "...", "queries": ["...", "..."]}}'
)
CHECK = (
    "You check whether retrieved memories can answer a question. Reply with JSON only: "
    '{{"adequate": true}} if they can, else {{"adequate": false, "missing": "what is missing", '
    '"queries": ["up to {n} new short search queries"]}}'
)


class _Stop(Exception):
    """Planning ends here; the message is the plan's note."""


class Budget:
    """The caps of one planned search: calls, tokens and the deadline, and what was spent."""

    def __init__(self, rounds: Rounds) -> None:
        settings = rounds.retriever.deps.settings
        self.rounds = rounds
        self.calls_left = settings.plan_calls
        self.tokens_left = settings.plan_tokens
        given = getattr(rounds, "deadline", None)  # the search's own, when it set one
        self.deadline: float = given if isinstance(given, float) else time.monotonic() + settings.plan_deadline
        self.calls = self.prompt_tokens = self.completion_tokens = 0

    def ask(self, stage: str, system: str, user: str) -> dict[str, Any]:
        """One model call within the caps, its reply parsed as a JSON object (else :class:`_Stop`)."""
        deps = self.rounds.retriever.deps
        llm = deps.llm
        assert llm is not None
        if self.calls_left < 1:
            raise _Stop(f"call cap reached ({deps.settings.plan_calls} calls) before the {stage}")
        prompt = deps.count_tokens(system) + deps.count_tokens(user) + 8  # + the chat format's few tokens
        reply_cap = min(REPLY_TOKENS, self.tokens_left - prompt)
        if reply_cap < 16:
            raise _Stop(f"token cap reached ({deps.settings.plan_tokens} tokens) before the {stage}")
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise _Stop(f"deadline reached before the {stage}")
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        started = time.perf_counter()
        self.calls_left -= 1
        self.calls += 1
        try:  # the call and the parse of its reply, both within the deadline
            done, text, data = _within(left, _ask_and_parse, llm, messages, reply_cap, self.deadline)
        except TimeoutError:
            self.tokens_left -= prompt + reply_cap  # what the call may still spend
            raise _Stop(f"deadline reached during the {stage}") from None
        except OmnimemError as exc:
            if time.monotonic() >= self.deadline:  # the provider gave up at the same deadline
                raise _Stop(f"deadline reached during the {stage}") from None
            raise _Stop(f"the {stage} call failed ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
        finally:
            self.rounds.time(stage, started)
        # The larger of the provider's count and ours: a provider reporting less cannot stretch the cap.
        used_prompt = max(done.prompt_tokens, prompt, 0)
        used_reply = max(done.completion_tokens, deps.count_tokens(text), 0)
        self.prompt_tokens += used_prompt
        self.completion_tokens += used_reply
        self.tokens_left -= used_prompt + used_reply
        if data is None:
            raise _Stop(f"the {stage} reply was not the JSON object asked for")
        return data

    def plan(self, ms: dict[str, float], note: str | None) -> Plan:
        return Plan("llm", tuple(self.rounds.rounds), self.calls, self.prompt_tokens, self.completion_tokens,
                    dict(ms), note)


def _within(seconds: float, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` if it returns within ``seconds``, else TimeoutError.

    The call runs on a daemon thread: one that outlives the deadline is abandoned (the provider may still
    bill it) and neither holds up the search nor keeps the process from exiting. The OpenAI-compatible
    provider ends it by the same deadline (:func:`~omnimem.llm.base.call_deadline`), slot and thread
    with it.
    """
    box: list[Any] = []
    finished = threading.Event()

    def run() -> None:
        try:
            box.append((True, call(*args, **kwargs)))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))
        finally:
            finished.set()

    threading.Thread(target=run, name="omnimem-plan-call", daemon=True).start()
    if not finished.wait(seconds):
        raise TimeoutError
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def _ask_and_parse(llm: LLM, messages: list[Message], reply_cap: int,
                   deadline: float) -> tuple[Completion, str, dict[str, Any] | None]:
    """One call under ``deadline`` (the provider waits for a slot and a reply at most until then, no retries),
    its reply cut near ``reply_cap`` tokens and the first JSON object in it (a linear parse), or ``None``."""
    with call_deadline(deadline):
        done = llm.complete(messages, max_tokens=reply_cap)
    text = done.text[: reply_bound(reply_cap)]
    data = next((value for value in json_values(drop_think_blocks(text).strip()) if isinstance(value, dict)), None)
    return done, text, data


def queries_of(data: dict[str, Any]) -> list[str]:
    """The search queries a reply names (strings only, at most ``MAX_QUERIES``)."""
    raw = data.get("queries")
    return [q.strip() for q in raw if isinstance(q, str) and q.strip()][:MAX_QUERIES] if isinstance(raw, list) else []


def llm_search(rounds: Rounds) -> Context:
    """Analyse and expand, search in parallel, check adequacy, search again (see the module)."""
    deps = rounds.retriever.deps
    if deps.llm is None:
        raise ConfigError("planner='llm' needs a model: configure one (OMNIMEM_LLM_MODEL, OMNIMEM_LLM_BASE_URL "
                          "or Memory(llm=...)), or use planner='offline'")
    q = rounds.query
    budget = Budget(rounds)
    note: str | None = None
    try:
        data = budget.ask("analysis", ANALYSE.format(n=MAX_QUERIES), f"Question: {q.text}")
    except _Stop as stop:
        note = str(stop)
        rounds.search([q.text], "the question (no analysis)")
        return rounds.context(lambda ms: budget.plan(ms, note))
    needs = data.get("needs")
    reason = f"the question and its expansion (needs: {needs})" if isinstance(needs, str) else "the question " \
        "and its expansion"
    rounds.search([q.text, *queries_of(data)], reason, parallel=True)
    for _ in range(deps.settings.plan_rounds):
        ctx = rounds.context(lambda ms: budget.plan(ms, None))
        try:
            verdict = budget.ask("check", CHECK.format(n=MAX_QUERIES),
                                 f"Question: {q.text}\n\nMemories:\n{_head(ctx, deps.count_tokens)}")
        except _Stop as stop:
            note = str(stop)
            break
        if verdict.get("adequate") is True:  # the context checked is the answer: not packed again
            return replace(ctx, plan=budget.plan(rounds.ms, None))
        missing = verdict.get("missing")
        wanted = queries_of(verdict)
        if not wanted:
            note = "the check found the context inadequate but named nothing to search"
            break
        if not rounds.search(wanted, f"the check: missing {missing}" if isinstance(missing, str) else "the check",
                             parallel=True):
            note = "the check asked only for queries searched already"
            break
    return rounds.context(lambda ms: budget.plan(ms, note))


def _head(ctx: Context, count: Any) -> str:
    """The context's lines up to ``CHECK_CONTEXT_TOKENS`` tokens (what the check reads)."""
    out: list[str] = []
    spent = 0
    for line in ctx.lines():
        spent += int(count(line)) + 1
        if spent > CHECK_CONTEXT_TOKENS:
            break
        out.append(line)
    return "\n".join(out)
