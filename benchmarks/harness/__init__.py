"""The shared harness: what every benchmark group builds on, and no group's own measurement.

Data sets and their evidence (``datasets``, ``evidence``, ``scoring``), the retrieval run
(``retrieval``: the conversations, the systems' protocol, the scores; ``systems``, ``baselines``;
``sessions``: LongMemEval's session metrics), the result files and the results index
(``report``, ``intervals``), synthetic dialogue (``synthetic``), database servers (``backends``),
``omnimem serve`` and its keys (``server``), a raw HTTP client (``rawhttp``), timing helpers
(``perf``), where the results go (``paths``) and the commands' plumbing (``commands``).

The harness imports no group (``tests/architecture/test_import_graph.py`` checks it).
"""
