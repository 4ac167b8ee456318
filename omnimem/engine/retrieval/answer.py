"""Answering a question from a pyramid context with a language model.

The library prompt is deliberately general: no dates, no data-set rules.
Benchmarks pass their own ``instructions``. Without a model, the answer is
``None`` and the evidence is still returned, with a note saying why.
"""

from __future__ import annotations

import time
from datetime import datetime

from omnimem.llm.base import LLM, Message
from omnimem.results import Answer, AnswerUsage
from omnimem.results import Context

NO_MODEL_NOTE = (
    "no language model is configured (set OMNIMEM_LLM_BASE_URL and OMNIMEM_LLM_MODEL, or pass llm=); "
    "returning the best evidence without an answer"
)

DEFAULT_INSTRUCTIONS = (
    "You answer questions using only the memories given to you. Each memory starts with the time it "
    "happened in brackets and, when known, who said it. Interpret relative expressions such as "
    "'yesterday' or 'last week' against that memory's time, and answer with absolute dates. Be brief: "
    "give the answer itself, not an explanation. If the memories do not contain the answer, say that "
    "the information is not in memory; never guess."
)


def build_messages(question: str, context: Context, *, instructions: str | None = None,
                   now: datetime | None = None) -> list[Message]:
    """The chat sent to the model: instructions, then memories, then the question."""
    memories = context.render() or "(no memories found)"
    today = f"Today is {now.date().isoformat()}.\n" if now is not None else ""
    user = f"{today}Memories:\n{memories}\n\nQuestion: {question}\nAnswer:"
    return [
        {"role": "system", "content": instructions or DEFAULT_INSTRUCTIONS},
        {"role": "user", "content": user},
    ]


def answer_question(llm: LLM | None, question: str, context: Context, *, instructions: str | None = None,
                    max_tokens: int | None = 256, now: datetime | None = None) -> Answer:
    """Ask ``llm`` to answer from ``context``; typed LLM errors propagate."""
    if llm is None:
        return Answer(question, None, context.hits, AnswerUsage(), context, None, NO_MODEL_NOTE)
    messages = build_messages(question, context, instructions=instructions, now=now)
    started = time.perf_counter()
    completion = llm.complete(messages, temperature=0.0, max_tokens=max_tokens)
    usage = AnswerUsage(completion.prompt_tokens, completion.completion_tokens, 1, time.perf_counter() - started)
    return Answer(question, completion.text.strip(), context.hits, usage, context, completion.model or llm.name)
