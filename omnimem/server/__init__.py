"""The HTTP server: ``create_app(memory)`` builds a FastAPI app over one :class:`~omnimem.Memory`.

Routes are thin: they check the caller (:mod:`.auth`), parse the body
(:mod:`.models`) and call the facade; errors become ``{"error", "message"}``
bodies (:mod:`.errors`). ``omnimem serve`` runs it with uvicorn
(:mod:`.serve`). The contract is ``docs/http-api.md``.
"""

from omnimem.errors import missing_extra

try:
    import fastapi  # noqa: F401
    import python_multipart  # noqa: F401  (uploads)
    import prometheus_client  # noqa: F401
except ImportError as exc:
    raise missing_extra(exc.name or "fastapi", "server") from None

from omnimem.server.app import create_app  # noqa: E402
from omnimem.server.limits import RateLimit  # noqa: E402

__all__ = ["RateLimit", "create_app"]
