"""OpenTelemetry spans for omnimem's operations (the ``[otel]`` extra: ``opentelemetry-api`` only).

Tracing is on exactly when the application has configured a tracer provider
(``opentelemetry.trace.set_tracer_provider``, ``opentelemetry-instrument``, or
:func:`set_tracer_provider` here for omnimem's spans alone).
Until then nothing here imports OpenTelemetry: a configured provider means the
application imported ``opentelemetry.trace`` already, so looking it up in
``sys.modules`` costs a dictionary lookup and a missing ``[otel]`` extra simply
means no traces. Spans carry counts, budgets, levels and the backend, never a
text, query, answer or id, unless the setting ``trace_content`` is on
(``docs/opentelemetry.md`` lists every attribute).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
Describe = Callable[[Mapping[str, Any], Any, bool], Mapping[str, Any]]

_API = "opentelemetry.trace"
_cache: list[Any] = [None, None]  # [provider, its tracer]: one tracer per configured provider
_chosen: list[Any] = [None]  # a provider given to set_tracer_provider, over the global one


def set_tracer_provider(provider: Any | None) -> None:
    """Send omnimem's spans to ``provider`` instead of OpenTelemetry's global one; ``None``: the global again.

    Like the ``tracer_provider=`` argument of OpenTelemetry's instrumentations, for an application (or a
    test) that keeps omnimem's traces apart; the global provider can be set only once per process.
    """
    _chosen[0] = provider


def tracer() -> Any | None:
    """The tracer of the configured provider; None when tracing is off (no provider, or no [otel] extra)."""
    trace = sys.modules.get(_API)
    if trace is None:
        return None
    provider = _chosen[0] if _chosen[0] is not None else trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    if _cache[0] is not provider:
        _cache[1] = provider.get_tracer("omnimem")  # no version: importing the package from here is a cycle
        _cache[0] = provider
    return _cache[1]


def _settings_content(owner: Any) -> bool:
    """Whether ``owner`` (a Memory, or an engine part holding ``parts``) traces texts and queries."""
    settings = getattr(owner, "settings", None) or getattr(getattr(owner, "parts", None), "settings", None)
    return bool(getattr(settings, "trace_content", False))


def backend(memory: Any) -> str:
    """Which store serves ``memory``: ``postgresql``, ``sqlite`` (a folder) or ``memory``."""
    if getattr(memory, "url", None):
        return "postgresql"
    return "sqlite" if getattr(memory, "path", None) is not None else "memory"


@contextmanager
def _operation(tr: Any, name: str, attributes: Mapping[str, Any], content: bool) -> Iterator[Any]:
    # exceptions are recorded by hand: their messages may quote the input, so only the class goes out
    # unless trace_content is on
    with tr.start_as_current_span(name, attributes=dict(attributes), record_exception=content,
                                  set_status_on_exception=False) as span:
        try:
            yield span
        except BaseException as exc:
            _set_error(span, exc, content)
            raise


def _set_error(span: Any, exc: BaseException, content: bool) -> None:
    trace = sys.modules[_API]
    span.set_attribute("error.type", type(exc).__name__)
    span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}" if content
                                 else type(exc).__name__))


def traced(name: str, describe: Describe, *, static: Callable[[Any], Mapping[str, Any]] | None = None,
           ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Run the method in a span ``name`` when tracing is on; ``describe(arguments, result, content)`` gives
    its attributes (after the call), ``static(self)`` those known before it. Off, the method runs as is, and
    so it does for an owner whose ``trace_operations`` is False (a remote Memory: its server traces the work)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            tr = tracer()
            owner = args[0]
            if tr is None or not getattr(owner, "trace_operations", True):
                return fn(*args, **kwargs)
            content = _settings_content(owner)
            with _operation(tr, name, static(owner) if static else {}, content) as span:
                result = fn(*args, **kwargs)
                if span.is_recording():
                    bound = signature.bind(*args, **kwargs)
                    bound.apply_defaults()
                    span.set_attributes({k: v for k, v in describe(bound.arguments, result, content).items()
                                         if v is not None})
                return result

        return run

    return wrap


def stage(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A child span timing one stage of an operation (``omnimem.search.dense``); a no-op when tracing is off."""
    tr = tracer()
    if tr is None:
        return nullcontext()
    return _operation(tr, name, attributes, False)


def mark_failed(exc: BaseException) -> None:
    """Mark the current span failed by ``exc`` (for failures that are handled, not raised: a failed job)."""
    if tracer() is None:
        return
    span = sys.modules[_API].get_current_span()
    if span.is_recording():
        _set_error(span, exc, False)


def inject(headers: Any) -> None:
    """Add the current trace context (``traceparent``) to outgoing HTTP ``headers`` when tracing is on."""
    if tracer() is None:
        return
    from opentelemetry import propagate

    propagate.inject(headers)


# -- what each operation's span says ----------------------------------------------------------------
def memory_static(memory: Any) -> Mapping[str, Any]:
    return {"omnimem.backend": backend(memory)}


def _scope_flags(args: Mapping[str, Any], content: bool) -> dict[str, Any]:
    """Which scope ids were given (the ids themselves only with trace_content)."""
    out: dict[str, Any] = {}
    for key in ("user_id", "agent_id", "session_id"):
        if args.get(key) is not None:
            out[f"omnimem.scope.{key}"] = str(args[key]) if content else True
    return out


def _results(results: Any) -> dict[str, Any]:
    accepted = sum(1 for r in results if r.accepted)
    return {"omnimem.units.accepted": accepted, "omnimem.units.skipped": len(results) - accepted}


def describe_add(args: Mapping[str, Any], result: Any, content: bool) -> Mapping[str, Any]:
    text = args.get("text")
    out = {**_scope_flags(args, content), **_results([result]),
           "omnimem.input.chars": len(text) if isinstance(text, str | bytes) else None,
           "omnimem.supersedes": len(args.get("supersedes") or ())}
    if content:
        out["omnimem.text"] = text if isinstance(text, str) else None
        out["omnimem.unit_id"] = result.id
    return out


def describe_add_dialogue(args: Mapping[str, Any], result: Any, content: bool) -> Mapping[str, Any]:
    return {**_scope_flags(args, content), **_results(result), "omnimem.turns": len(result),
            "omnimem.engine.enrich.restate": bool(args.get("restate"))}


def describe_search(args: Mapping[str, Any], ctx: Any, content: bool) -> Mapping[str, Any]:
    levels = [0, 0, 0]
    for hit in ctx.hits:
        levels[min(max(hit.level, 1), 3) - 1] += 1
    out: dict[str, Any] = {
        **_scope_flags(args, content), "omnimem.budget": ctx.budget, "omnimem.tokens_used": ctx.tokens,
        "omnimem.hits": len(ctx.hits), "omnimem.candidates": ctx.candidates, "omnimem.dropped": len(ctx.dropped),
        "omnimem.levels": levels, "omnimem.packing": ctx.packing, "omnimem.top_k": args.get("top_k"),
        "omnimem.as_of": args.get("as_of") is not None, "omnimem.graph": ctx.graph is not None,
    }
    if content:
        out["omnimem.query"] = ctx.query
        out["omnimem.hit_ids"] = [h.unit.id for h in ctx.hits]
    return out


def describe_search_request(args: Mapping[str, Any], ctx: Any, content: bool) -> Mapping[str, Any]:
    """:func:`describe_search` for an engine's search, whose arguments are one request."""
    request = args["request"]
    flat = {**request.scope.as_dict(), "top_k": request.top_k, "as_of": request.as_of}
    return describe_search(flat, ctx, content)


def describe_ask(args: Mapping[str, Any], answer: Any, content: bool) -> Mapping[str, Any]:
    usage = answer.usage
    out: dict[str, Any] = {**_scope_flags(args, content), "omnimem.budget": answer.context.budget,
                           "omnimem.tokens_used": answer.context.tokens, "omnimem.hits": len(answer.evidence),
                           "omnimem.answered": answer.answer is not None, "omnimem.llm.calls": usage.calls,
                           "omnimem.llm.prompt_tokens": usage.prompt_tokens,
                           "omnimem.llm.completion_tokens": usage.completion_tokens,
                           "omnimem.llm.model": answer.model}
    if content:
        out["omnimem.question"] = answer.question
        out["omnimem.engine.retrieval.answer"] = answer.answer
    return out


def describe_forget(args: Mapping[str, Any], removed: Any, content: bool) -> Mapping[str, Any]:
    ids = args.get("unit_ids")
    return {**_scope_flags(args, content), "omnimem.units.removed": removed,
            "omnimem.by_time": args.get("since") is not None or args.get("until") is not None,
            "omnimem.by_ids": len(ids) if ids is not None else None, "omnimem.all": bool(args.get("all")),
            "omnimem.all_users": bool(args.get("all_users"))}


def describe_job(args: Mapping[str, Any], _result: Any, _content: bool) -> Mapping[str, Any]:
    job = args["job"]
    return {"omnimem.job.kind": job.kind, "omnimem.job.id": job.id, "omnimem.job.key": job.key,
            "omnimem.job.attempt": job.attempts}
