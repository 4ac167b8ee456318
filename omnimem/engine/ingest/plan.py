"""Which jobs a batch of freshly stored units needs (enqueued in their insert transaction)."""

from __future__ import annotations

from collections.abc import Sequence

from omnimem.engine.deps import Deps
from omnimem.mau import MAU, Modality
from omnimem.store.jobs import NewJob

ENRICH = "enrich"  # one unit: summary, caption, graph, supersede (the tasks it needs, in that order)
GRAPH = "graph"  # graph rows of units that keep their version, extracted together
RESTATE = "restate"  # dialogue turns stored offline: restated by the LLM, the restated units supersede them


def plan_jobs(deps: Deps, units: Sequence[MAU], action: str) -> list[NewJob]:
    """The enrichment the settings ask for: one ``enrich`` job per unit that needs a new version or a
    supersession check, one ``graph`` job and one ``restate`` job (offline-restated turns) per batch. Keys make a re-enqueue a no-op."""
    settings, llm = deps.settings, deps.llm
    jobs: list[NewJob] = []
    turns: list[str] = []
    graphed: list[str] = []
    for unit in units:
        if unit.metadata.get("restated") == "offline":
            if llm is not None:
                turns.append(unit.id)
            continue
        tasks: list[str] = []
        text = unit.modality is Modality.TEXT
        if text and llm is not None and settings.llm_summaries and unit.raw_ref is not None:
            tasks.append("summary")  # a long text: its level-1 line is written by the model
        if (unit.modality is Modality.IMAGE and not unit.metadata.get("caption") and settings.vision_captions
                and llm is not None):
            tasks.append("caption")
        if deps.graph is not None and (text or unit.metadata.get("caption") or "caption" in tasks):
            if tasks:
                tasks.append("graph")  # of the new version, written with it
            else:
                graphed.append(unit.id)
        if text and settings.auto_supersede and llm is not None and action != "import":
            tasks.append("supersede")
        if tasks:
            jobs.append(NewJob(ENRICH, f"{ENRICH}:{unit.id}", {"unit": unit.id, "tasks": tasks}))
    if graphed:  # one extraction over the batch, as the synchronous path does (names resolve across it)
        jobs.append(NewJob(GRAPH, f"{GRAPH}:{graphed[0]}", {"units": graphed}))
    if turns:
        jobs.append(NewJob(RESTATE, f"{RESTATE}:{turns[0]}", {"units": turns}))
    return jobs
