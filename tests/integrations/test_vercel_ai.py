"""The Vercel AI SDK part of the TypeScript client (``omnimem/ai``, clients/typescript/src/ai.ts).

Its behaviour is tested by ``clients/typescript/test/ai.test.ts`` through the SDK's own ``generateText``,
``streamText`` and ``wrapLanguageModel`` with ``MockLanguageModelV3``, against a live ``omnimem serve``
(``npm test``, run by ``.ci/run``). Here: the package keeps ``ai`` optional (the plain client neither
imports nor installs it), the lockfile pins the version the tests run, the page shows the tested
example, and, where node and the packages are installed, those tests run from pytest too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"


def package() -> dict[str, object]:
    return json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_ai_is_an_optional_peer_that_the_plain_client_does_not_need() -> None:
    pkg = package()
    assert "ai" not in pkg.get("dependencies", {})  # type: ignore[operator]
    assert pkg["peerDependencies"] == {"ai": "^6.0.0"}
    assert pkg["peerDependenciesMeta"] == {"ai": {"optional": True}}
    assert pkg["exports"]["./ai"] == {"types": "./dist/src/ai.d.ts", "import": "./dist/src/ai.js"}  # type: ignore[index]
    for plain in ("index.ts", "errors.ts"):
        source = (CLIENT / "src" / plain).read_text(encoding="utf-8")
        assert not re.search(r"""from ["']ai["'/]""", source), f"src/{plain} imports the AI SDK"


def test_the_lockfile_pins_the_sdk_the_tests_run() -> None:
    pinned = package()["devDependencies"]["ai"]  # type: ignore[index]
    assert re.fullmatch(r"6\.\d+\.\d+", pinned)
    lock = json.loads((CLIENT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/ai"]["version"] == pinned
    root = lock["packages"][""]
    assert root["devDependencies"]["ai"] == pinned and root["peerDependencies"] == {"ai": "^6.0.0"}


def test_the_page_shows_the_tested_example() -> None:
    page = (ROOT / "docs" / "vercel-ai.md").read_text(encoding="utf-8")
    shown = re.search(r"```typescript\n(.*?)```", page.split("## Runnable example", 1)[1], re.S)
    assert shown and shown.group(1) == (CLIENT / "examples" / "vercel-ai.ts").read_text(encoding="utf-8")
    assert "vercel-ai.ts" not in (CLIENT / "test" / "client.test.ts").read_text(encoding="utf-8")
    assert "dist/examples/vercel-ai.js" in (CLIENT / "test" / "ai.test.ts").read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("node") is None or not (CLIENT / "node_modules" / "ai").is_dir(),
                    reason="needs node and `npm ci` in clients/typescript (.ci/run runs these tests with npm test)")
def test_the_sdk_tests_pass_against_a_live_server() -> None:
    env = {**os.environ, "OMNIMEM_PYTHON": sys.executable}
    build = subprocess.run(["npm", "run", "build"], cwd=CLIENT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    out = subprocess.run(["node", "--test", "dist/test/ai.test.js"], cwd=CLIENT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert re.search(r"^# pass [1-9]\d*$", out.stdout, re.M) and re.search(r"^# fail 0$", out.stdout, re.M)
