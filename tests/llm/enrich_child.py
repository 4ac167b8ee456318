"""A worker process for the crash tests: runs one enrichment job and stops dead at a chosen point.

``python enrich_child.py STORE BASE_URL POINT``. It prints ``AT <point>`` and then sleeps until the
test SIGKILLs it. POINT is ``claimed`` (the model is slow: killed while waiting for it), ``answered``
(the model answered; nothing written) or ``written`` (the result committed; the job not completed).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from omnimem import Memory
from omnimem.llm import LLMConfig, OpenAICompatibleLLM
from omnimem.store.sqlite.store import SQLiteStore


def stop_here(point: str) -> None:
    print(f"AT {point}", flush=True)
    time.sleep(3600)


def main(store: str, url: str, point: str) -> None:
    if point == "answered":  # the model's answer is in hand: stop before the first write of the result
        insert = SQLiteStore.insert

        def halt_insert(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
            stop_here(point)
            return insert(self, *args, **kwargs)

        SQLiteStore.insert = halt_insert  # type: ignore[method-assign]
    if point == "written":  # the result committed: stop before the job is marked complete
        SQLiteStore.complete = lambda self, *a, **k: stop_here(point)  # type: ignore[method-assign,assignment]
    llm = OpenAICompatibleLLM(LLMConfig(base_url=url, model="test-model", api_key="sk-test", timeout=120,
                                        max_retries=0))
    with Memory(store, llm=llm, enrich="off", graph=True, graph_extractor="spacy", enrich_lease=1.0) as mem:
        print("CLAIMING", flush=True)
        mem.engine.enricher.run_once("child")
        stop_here("done")


if __name__ == "__main__":
    main(*sys.argv[1:4])
