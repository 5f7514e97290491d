#!/usr/bin/env bash
# Regenerate every dump of ../: each script once with MindSpore 2.10.0 and once with 2.0.0.
# Usage: bash make_all.sh WORK_DIR PY_MS2_10_0 PY_MS2_0_0
#   e.g. bash make_all.sh /tmp/dumpgen /tmp/ms210/bin/python /tmp/mi-venv/bin/python
# Writes WORK_DIR/<name>/ms2_10_0, WORK_DIR/<name>/ms2_0_0 and WORK_DIR/<name>_<version>.log,
# then makes the files readable (MindSpore writes 0400/0700). Copy WORK_DIR/<name> to ../<name>.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$1"; py210="$2"; py200="$3"
for name in dense_stack while_loop while_loop_fwd two_graphs; do
  for pair in "ms2_10_0:$py210" "ms2_0_0:$py200"; do
    ver="${pair%%:*}"; py="${pair#*:}"
    rm -rf "$work/$name/$ver"
    bash "$here/run_dump.sh" "train_$name.py" "dump_config_$name.json" "$work/$name/$ver" "$py" \
      > "$work/${name}_$ver.log" 2>&1
    chmod -R u+rwX,go+rX "$work/$name/$ver"
  done
done
