"""What an open engine works with and never changes: :class:`Deps`.

An engine (see :mod:`omnimem.engine.local`) builds one :class:`Deps` when it
opens and hands it to the modules that do the work; they never see the
facade. Nothing in it is reassigned: what changes after the engine opens
(whether it is closed, the reads in flight, the embedder and search that
``reembed`` swaps) is the writer's, in :class:`omnimem.engine.state.WriterState`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from omnimem.config import Settings
from omnimem.contract.caller import current_actor
from omnimem.llm.base import LLM
from omnimem.store.base import Store
from omnimem.tokens import TokenCounter

if TYPE_CHECKING:  # the graph and CLIP need extras: built only when switched on
    from omnimem.graph.engine import KnowledgeGraph
    from omnimem.index.clip import ClipSearch


@dataclass(frozen=True, eq=False)
class Deps:
    """Settings, the store, the models that are never swapped, the time zone and the audit actor."""

    settings: Settings
    store: Store
    path: Path | None
    tz: tzinfo
    default_actor: str  # who the audit log names; a server request acts as its key (see acting_as)
    count_tokens: TokenCounter
    llm: LLM | None = None
    graph: KnowledgeGraph | None = None  # its embedder is swapped by reembed (``use_embedder``), the graph is not
    clip: ClipSearch | None = None

    @property
    def actor(self) -> str:
        """Who the audit log names for the current call: the request's key on a server, else the default."""
        return current_actor() or self.default_actor

    @property
    def read_only(self) -> bool:
        return self.store.read_only
