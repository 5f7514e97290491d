"""Freeze tuidebug's answers to watch_api.py's twenty watchpoints on a dump MindInsight cannot
answer (2.4+ dumps; the training while_loop 2.0 dump), as `expected/<name>_<version>.tuidebug.json`.

Run it only after checking the dump's file mapping (`check_naming_rule.py`, and tuidebug
opening the dump without a problem): the answers are then tuidebug's, frozen against
regressions. Tensors are named by their files (`op_name`), like the 2.10 reference answers of
the shared fixtures.

usage: python freeze_answers.py NAME VERSION     (from tests/data/dumps/gen; needs ../../../../shared)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
sys.path.insert(0, str(REPO))

from tests.api.mindinsight_script import run_watch_api  # noqa: E402
from tuidebug.offline.dump import OfflineDump  # noqa: E402


def main() -> None:
    name, version = sys.argv[1], sys.argv[2]
    root = HERE.parent / name / version
    fixtures = REPO.parent / "shared" / "fixtures"
    dump = OfflineDump(root)
    assert not dump.problems or all("ms_global_execution_order" in p for p in dump.problems), (
        dump.problems
    )
    with tempfile.TemporaryDirectory() as tmp:
        doc = run_watch_api(fixtures, root, Path(tmp))
    out: dict[str, list[dict[str, object]]] = {}
    for group in ("watchpoints", "extra_watchpoints"):
        for w in doc[group]:
            hits = []
            for h in w["hits"]:
                f = dump.tensor_file(h["rank"], h["graph"], h["node"], h["slot"], h["iteration"])
                assert f is not None, h
                record = {
                    "rank": h["rank"],
                    "graph": h["graph"],
                    "iteration": h["iteration"],
                    "op_type": f.op_type,
                    "name": f.op_name,
                    "slot": h["slot"],
                    "error_code": h["error_code"],
                }
                actual = next((p["actual"] for p in h.get("actual", []) if p["hit"]), None)
                if actual is not None:
                    record["actual"] = actual
                hits.append(record)
            out[w["label"]] = hits
    target = HERE.parent / "expected" / f"{name}_{version}.tuidebug.json"
    target.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{target.name}: " + ", ".join(f"{k} {len(v)}" for k, v in out.items()))


if __name__ == "__main__":
    main()
