#!/usr/bin/env bash
# Write the MLP's synchronous dump with a real MindSpore.
# Usage: bash run_dump.sh OUTPUT_DIR [PYTHON]
# MindSpore needs an absolute dump path: the placeholder in dump_config.json is replaced by the
# absolute OUTPUT_DIR in a temporary copy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
py="${2:-python}"
cfg="$(mktemp --suffix=.json)"
trap 'rm -f "$cfg"' EXIT
sed "s#/ABSOLUTE/PATH/TO/DUMP_DIR#$out#" "$here/dump_config.json" > "$cfg"
MINDSPORE_DUMP_CONFIG="$cfg" "$py" "$here/train_mlp.py" 3
