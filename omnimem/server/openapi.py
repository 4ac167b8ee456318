"""The HTTP API's OpenAPI schema as committed for the TypeScript client (``clients/typescript/openapi.json``).

    python -m omnimem.server.openapi clients/typescript/openapi.json

writes it; ``tests/integrations/test_typescript_schema.py`` fails when the committed file differs from
what the app produces, and ``.ci/run`` regenerates the TypeScript types from it and fails on a diff.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def schema_json() -> str:
    """The app's OpenAPI document, with sorted keys and a final newline (stable to diff)."""
    from omnimem.memory import Memory
    from omnimem.server import create_app

    with Memory(embedder="fake") as memory:
        document = create_app(memory, mcp=False).openapi()
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: python -m omnimem.server.openapi OUT.json")
    Path(argv[0]).write_text(schema_json(), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
