"""Framework integrations, each behind its own extra: LangChain (``[langchain]``), LangGraph (``[langgraph]``),
LlamaIndex (``[llamaindex]``), the OpenAI Agents SDK (``[openai-agents]``), CrewAI (``[crewai]``).

Importing a submodule without its extra raises :class:`omnimem.errors.MissingDependencyError`
naming the ``pip install`` that fixes it; ``import omnimem`` never imports these.
"""

from omnimem.errors import ConfigError


def explicit_scope(owner: str, user_id: str | None, all_users: bool) -> None:
    """A search that an integration runs names its user, or says ``all_users=True`` (as ``Memory.forget`` asks):
    a ConfigError otherwise, so no framework object searches every user's memory by omission."""
    if all_users and user_id is not None:
        raise ConfigError(f"{owner} takes a user_id or all_users=True, not both")
    if not all_users and user_id is None:
        raise ConfigError(f"{owner} searches one user's memory: pass user_id=..., or all_users=True to search "
                          "every user's")
