"""MindInsight's own script (`../shared/tools/mindinsight/watch_api.py`), run on tuidebug with
only its import line changed, and the project's own dumps it is run on (tests/data/dumps).
Shared by the agreement and transcript tests and by data/dumps/gen/freeze_answers.py."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

from tuidebug.offline.dump import OfflineDump

PROJECT_DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"


def watch_api_module(fixtures_dir: Path) -> types.ModuleType:
    """MindInsight's watch_api.py with `mindinsight.debugger` replaced by `tuidebug.api`."""
    path = fixtures_dir.parent / "tools" / "mindinsight" / "watch_api.py"
    source = path.read_text()
    assert "from mindinsight.debugger import" in source
    module = types.ModuleType("watch_api_on_tuidebug")
    module.__file__ = str(path)
    code = compile(
        source.replace("from mindinsight.debugger import", "from tuidebug.api import"),
        str(path),
        "exec",
    )
    exec(code, module.__dict__)  # the shared oracle script, as its authors run it
    return module


def run_watch_api(fixtures_dir: Path, root: Path, out: Path) -> dict[str, Any]:
    module = watch_api_module(fixtures_dir)
    argv = sys.argv
    sys.argv = ["watch_api.py", str(root), str(out / "out.json"), str(out / "transcript.txt")]
    try:
        module.main()
    finally:
        sys.argv = argv
    return json.loads((out / "out.json").read_text())


def graphs_without_history(root: Path) -> set[str]:
    dump = OfflineDump(root)
    return {g for r in dump.ranks for g in dump.graphs(r) if not dump.has_history(r, g)}
