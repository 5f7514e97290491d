"""The entry point itself (`python -m tuidebug`): --help names every command, --version says
which tuidebug it is, and no command at all is a usage message with exit status 2."""

from __future__ import annotations

import subprocess
import sys


def test_entry_point_help_version_and_no_command() -> None:
    run = [sys.executable, "-m", "tuidebug"]
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "check" in helped.stdout and "simulate" in helped.stdout
    version = subprocess.run([*run, "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("tuidebug ")
    bare = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2 and "usage:" in bare.stderr and "Traceback" not in bare.stderr
