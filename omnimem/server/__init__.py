"""The HTTP server: ``create_app(memory)`` builds a FastAPI app over one :class:`~omnimem.Memory`.

Routes are thin: they check the caller (:mod:`.auth`), parse the body
(:mod:`.models`) and call the facade; errors become ``{"error", "message"}``
bodies (:mod:`.errors`). ``omnimem serve`` runs it with uvicorn
(:mod:`.serve`). The contract is ``docs/http-api.md``.
"""

from omnimem.server.app import create_app
from omnimem.server.limits import RateLimit

__all__ = ["RateLimit", "create_app"]
