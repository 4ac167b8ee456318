"""Do search results depend on the CPU's kernels? The identical-results scenario under other kernels.

``python -m benchmarks retrieval-kernels`` runs the scenario of
``tests/engine/retrieval/test_retrieval_identical.py`` in fresh processes, each with other
kernels chosen the way another machine would choose them: FAISS's generic
code instead of AVX2 (``FAISS_SIMD_LEVEL=NONE``), numpy's baseline selection
and sort kernels instead of AVX2 (``NPY_DISABLE_CPU_FEATURES``), OpenBLAS's
oldest x86 kernel (``OPENBLAS_CORETYPE=Prescott``) and other thread counts.
Each run is compared with a run on the machine's own kernels, search by
search, as the test compares (``differences``), for the plain ``fake``
embedder and for ``fake-exact``, which the test uses. A last row searches
with reciprocal rank fusion's k at 61 instead of 60: a real change of
ranking, which must show.

Writes ``benchmarks/results/retrieval-kernels.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.paths import RESULTS, ROOT
from tests.engine.retrieval.test_retrieval_identical import SETUPS, differences

X86_AVX2 = "AVX2 FMA3 X86_V3"  # numpy's AVX2 dispatch targets, disabled together
VARIANTS: dict[str, dict[str, str]] = {
    "own kernels, OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
    "OMP_NUM_THREADS=2": {"OMP_NUM_THREADS": "2"},
    "FAISS generic (FAISS_SIMD_LEVEL=NONE)": {"FAISS_SIMD_LEVEL": "NONE"},
    "numpy without AVX2 (NPY_DISABLE_CPU_FEATURES)": {"NPY_DISABLE_CPU_FEATURES": X86_AVX2},
    "OpenBLAS Prescott kernel": {"OPENBLAS_CORETYPE": "Prescott"},
    "all of these, 2 threads": {"FAISS_SIMD_LEVEL": "NONE", "NPY_DISABLE_CPU_FEATURES": X86_AVX2,
                                "OPENBLAS_CORETYPE": "Prescott", "OMP_NUM_THREADS": "2"},
}
CHANGE = "rrf_k=61 (a real change)"
_CHILD = """
import json, sys, tempfile
from pathlib import Path
from tests.engine.retrieval.test_retrieval_identical import SETUPS, scenario
embedder, rrf_k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
setups = {name: {**options, "rrf_k": rrf_k} for name, options in SETUPS.items()}
with tempfile.TemporaryDirectory() as tmp:
    Path(out).write_text(json.dumps(scenario(Path(tmp), setups, embedder)), encoding="utf-8")
"""


def run(embedder: str, env: dict[str, str], rrf_k: int = 60) -> dict[str, Any]:
    """The scenario's results in a fresh process with ``env`` added to this one's environment."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        subprocess.run([sys.executable, "-c", _CHILD, embedder, str(rrf_k), str(out)], check=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **env})
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return result


def main(argv: Sequence[str] | None = None) -> None:
    argparse.ArgumentParser(prog="python -m benchmarks retrieval-kernels",
                            description=__doc__.splitlines()[0] if __doc__ else None).parse_args(argv)  # no options
    searches = 0
    rows: list[dict[str, Any]] = []
    for embedder in ("fake", "fake-exact"):
        base = run(embedder, {})
        searches = sum(len(base[name]) for name in SETUPS)
        runs = {label: run(embedder, env) for label, env in VARIANTS.items()}
        runs[CHANGE] = run(embedder, {}, rrf_k=61)
        for label, got in runs.items():
            differing = sum(len(differences(base[name], got[name])) for name in SETUPS)
            rows.append({"embedder": embedder, "variant": label, "env": VARIANTS.get(label, {}),
                         "differing_searches": differing, "searches": searches})
    report = {"command": "python -m benchmarks retrieval-kernels", "machine": platform.machine(),
              "python": platform.python_version(), "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "retrieval-kernels.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    lines = ["# Search results under other CPU kernels", "",
             "`python -m benchmarks retrieval-kernels`: the scenario of `tests/engine/retrieval/test_retrieval_identical.py` "
             "(3 setups x 24 searches) in fresh processes with other kernels, compared search by search with a "
             "run on this machine's own kernels (scores to 1e-6, everything else exactly).", "",
             "| embedder | variant | searches that differ |", "|---|---|---|"]
    lines += [f"| {r['embedder']} | {r['variant']} | {r['differing_searches']} of {r['searches']} |" for r in rows]
    (RESULTS / "retrieval-kernels.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
