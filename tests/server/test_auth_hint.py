"""A call without a key is told where keys come from, and the command it names really makes one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.server.conftest import Served


def test_a_call_without_a_key_names_the_command_that_creates_one(served: Served, tmp_path: Path) -> None:
    answer = served.client(None).post("/v1/search", json={"query": "anything", "user_id": "alice"})
    assert answer.status_code == 401
    message = answer.json()["message"]
    assert answer.json()["error"] == "AuthError"
    assert "omnimem keys create" in message

    command = re.search(r"`(omnimem keys create [^`]+)`", message)
    assert command is not None
    argv = (command.group(1).replace("NAME", "hint").replace("ROLE", "read")
            .replace("PATH", str(tmp_path / "hint-store")).split()[1:])
    made = subprocess.run([str(Path(sys.executable).with_name("omnimem")), *argv, "--init", "--user-id", "ann"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
