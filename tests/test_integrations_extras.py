"""The integrations are optional: sqlstore imports without them, and each names its extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

TIMEOUT_S = 60.0


@pytest.mark.parametrize(
    ("blocked", "module", "extra"),
    [
        ("agents", "sqlstore.integrations.openai_agents", "openai-agents"),
        ("google.adk", "sqlstore.integrations.adk", "adk"),
        ("langgraph", "sqlstore.integrations.langgraph", "langgraph"),
    ],
)
def test_missing_framework_names_the_extra(blocked: str, module: str, extra: str) -> None:
    """Without the framework, sqlstore and its CLI import; the integration says what to install."""
    code = (
        "import sys\n"
        f"sys.modules[{blocked!r}] = None  # as if the framework were not installed\n"
        "import sqlstore, cli.main, sqlstore.integrations.transcripts\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    assert f"pip install 'sqlstore[{extra}]'" in done.stdout
