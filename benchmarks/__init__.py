"""omnimem's benchmarks: retrieval recall (LoCoMo, LongMemEval, Mem-Gallery), QA, speed and scale, serving,
reliability, PostgreSQL, media; one subpackage per group, on the shared ``benchmarks.harness``.

Not part of the ``omnimem`` distribution: run from a source checkout as ``python -m benchmarks ...``
(``omnimem bench ...`` is the same command when this package is importable). The harness uses
omnimem's public API plus the extension points listed in ``benchmarks/README.md``;
``tests/bench/test_public_api.py`` checks it.
"""

OMNIMEM_BENCHMARKS = True  # marks this package for ``omnimem bench`` (another top-level ``benchmarks`` may exist)
