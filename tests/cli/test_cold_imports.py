"""Cold start: the short commands load only what they use (issue 13, "Cold start").

Each case runs in a fresh interpreter (sys.modules is the measure; timings are not, the
machines are noisy) and lists the modules it must not have loaded. `tuidebug check` and
the API must never load the TUI (Textual), the online side (grpc and its generated
modules) or the compiled scan engine's numba for a small dump; `tuidebug check --help`
loads not even numpy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

TIMEOUT = 120  # seconds: a fresh interpreter importing numpy on a loaded machine

# never for a check or the API: the TUI, the online side, the compiled engine
NOT_FOR_CHECK = (
    "textual",
    "rich",
    "grpc",
    "numba",
    "llvmlite",
    "tuidebug.tui",
    "tuidebug.online",
    "tuidebug._proto.debug_grpc_pb2",
    # the session interface and its watchpoint book: the TUI's, not the dump model's
    "tuidebug.core.session",
    "tuidebug.core.watchpoint_book",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (stdout is its own)."""
    script = (
        "import sys, json, io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def offenders(loaded: set[str], banned: tuple[str, ...]) -> list[str]:
    """Banned packages present, each named once (a package or any of its submodules)."""
    return sorted(b for b in banned if any(m == b or m.startswith(b + ".") for m in loaded))


def test_check_help_loads_neither_numpy_nor_textual() -> None:
    loaded = loaded_after(
        "from tuidebug.cli import main\n"
        "try:\n"
        "    main(['check', '--help'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert offenders(loaded, (*NOT_FOR_CHECK, "numpy", "google.protobuf")) == []


def test_check_command_loads_no_tui_online_or_numba(dump_2_10: Path) -> None:
    loaded = loaded_after(
        "from tuidebug.cli import main\n"
        f"rc = main(['check', {str(dump_2_10)!r}, '--watch', 'TO', '--json'])\n"
        "assert rc in (0, 1), rc"
    )
    assert "tuidebug.offline.dump" in loaded  # the check ran
    assert offenders(loaded, NOT_FOR_CHECK) == []


def test_api_analyzer_and_select_tensors_load_no_session_or_tui(dump_2_10: Path) -> None:
    loaded = loaded_after(
        "from tuidebug.api import DumpAnalyzer\n"
        f"analyzer = DumpAnalyzer({str(dump_2_10)!r})\n"
        "assert analyzer.select_tensors('.*', use_regex=True)"
    )
    assert offenders(loaded, NOT_FOR_CHECK) == []


def test_import_api_alone_stays_light() -> None:
    loaded = loaded_after("import tuidebug.api")
    assert offenders(loaded, (*NOT_FOR_CHECK, "numpy", "google.protobuf")) == []
