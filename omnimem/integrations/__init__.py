"""Framework integrations, each behind its own extra: LangChain (``[langchain]``), LangGraph (``[langgraph]``).

Importing a submodule without its extra raises :class:`omnimem.errors.MissingDependencyError`
naming the ``pip install`` that fixes it; ``import omnimem`` never imports these.
"""
