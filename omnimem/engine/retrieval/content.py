"""What a hit shows beyond its summary line: its full text (level 2) and its raw content (level 3).

Read from the store's cold tier; a unit forgotten by another thread or process during a search keeps
its lower level.
"""

from __future__ import annotations

from dataclasses import replace

from omnimem.context import Context, RawContent
from omnimem.errors import NotFoundError
from omnimem.mau import MAU, Modality
from omnimem.store.base import Store
from omnimem.tokens import raw_tokens


def full_text(store: Store, unit: MAU) -> str | None:
    """Level-2 text: the full text of a long unit (cold tier), a transcript, or the summary."""
    if unit.modality is not Modality.TEXT:
        return str(unit.metadata.get("transcript") or unit.summary)
    if unit.raw_ref is None:
        return unit.summary
    try:
        return store.read_raw(unit.raw_ref).decode("utf-8")
    except NotFoundError:  # forgotten by another thread or process during this search: stays at level 1
        return None


def _read_or_none(store: Store, ref: str) -> bytes | None:
    """Cold-tier bytes, or None when a concurrent forget removed them mid-search (the label stays)."""
    try:
        return store.read_raw(ref)
    except NotFoundError:
        return None


def raw_content(unit: MAU) -> RawContent | None:
    """Level-3 content: media only (a text unit's raw content is its full text, level 2)."""
    if unit.raw_ref is None or unit.modality is Modality.TEXT:
        return None
    meta = unit.metadata
    mime = str(meta.get("mime", "application/octet-stream"))
    if unit.modality is Modality.IMAGE:
        label = f"<image {mime} {meta.get('width')}x{meta.get('height')} ref={unit.raw_ref[:12]}>"
    else:
        label = f"<audio {mime} {meta.get('start_s')}-{meta.get('end_s')}s ref={unit.raw_ref[:12]}>"
    return RawContent(label, mime, None, raw_tokens(unit.modality, meta))


def with_raw_bytes(store: Store, ctx: Context) -> Context:
    """``ctx`` with cold-tier bytes loaded for the hits that reached level 3 only."""
    if not any(h.level == 3 for h in ctx.hits):
        return ctx
    hits = tuple(
        replace(h, raw=replace(h.raw, data=_read_or_none(store, h.unit.raw_ref)))
        if h.level == 3 and h.raw is not None and h.unit.raw_ref else h
        for h in ctx.hits
    )
    return replace(ctx, hits=hits)
