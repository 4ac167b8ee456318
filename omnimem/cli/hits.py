"""What ``omnimem search`` prints of a context: JSON, the packed text, or a table of the best hits.

The table puts what ranked each hit first (``#`` and its fused score with the
dense/BM25 ranks), the query's cosine similarity second (``cos``: it need not
fall in rank order), then its level, time and memory. Who said it and the
memory's source ids are written in the memory column, and there are no
vertical rules, so at 80 columns the memory keeps about 30 characters a line.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from omnimem.cli.common import print_json
from omnimem.cli.opening import out

if TYPE_CHECKING:
    from omnimem.context import Context, Hit


def print_context(ctx: Context, *, as_json: bool, context: bool, limit: int) -> None:
    """What ``search`` prints: JSON, the packed context, or a table of the best ``limit`` hits."""
    if as_json:
        print_json(ctx.to_dict())
        return
    if context:
        sys.stdout.write(ctx.render() + "\n")  # exactly the text a model reads: no wrapping
        return
    from omnimem.context import ranked_by
    from omnimem.timeparse import format_time

    best = sorted(ctx.hits, key=lambda h: h.rank)[:limit]
    title = (f"{len(best)} of {len(ctx.hits)} memories in context ({ctx.tokens}/{ctx.budget} tokens); "
             "--limit N for more, --context for the packed text")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  padding=(0, 1, 0, 0))
    for col in ("#", "fused d/b", "cos", "lvl"):
        table.add_column(col, no_wrap=True)
    table.add_column("time")
    table.add_column("memory", ratio=1, overflow="fold")
    for hit in best:
        u = hit.unit
        fused, dense, sparse, cosine = hit_scores(hit)
        said = f"{u.speaker}: {u.summary}" if u.speaker else u.summary
        table.add_row(str(hit.rank), f"{fused} {dense}/{sparse}", cosine, str(hit.level), format_time(u.event_time),
                      Text(f"{said} ({','.join(u.source_ids)})" if u.source_ids else said))
    out.print(table)
    order = ("ranked by the fused score" if ranked_by(ctx.hits, ctx.plan) == "fused" else
             "ranked by # (a reranker's order, a planner's merged queries, or places the fused score does not "
             "give); fused:")
    out.print(f"{order} reciprocal rank fusion of the dense/BM25 ranks d/b ('-': not found by that one); cos: the "
              "query's cosine similarity, shown second", markup=False, highlight=False)


def hit_scores(hit: Hit) -> tuple[str, str, str, str]:
    """A hit's fused score, its dense and BM25 ranks ("-": not found by that one) and its cosine, as shown."""
    fused = "-" if hit.fused is None else f"{hit.fused:.5f}"
    return (fused, str(hit.ranks.get("dense", "-")), str(hit.ranks.get("sparse", "-")), f"{hit.score:.3f}")
