#!/bin/sh
# msprobe compare's own answers on more pairs of ../../../../../shared/fixtures/msprobe_mlp
# (mindstudio-probe 26.2.0, torch 2.13.0 CPU, numpy 2.4.6, pandas 3.1.1 in a venv of its own):
#   sh make.sh /path/to/venv /path/to/shared/fixtures/msprobe_mlp
# Each CSV is `msprobe compare -tp TARGET -gp GOLDEN -o OUT` renamed; tests/compare reads them.
set -e
V=$1; M=$2; OUT=$(mktemp -d)
run() {  # name target golden
  mkdir -p "$OUT/$1"
  "$V/bin/msprobe" compare -tp "$M/$2" -gp "$M/$3" -o "$OUT/$1" >/dev/null
  cp "$OUT/$1"/compare_result_*.csv "$1.csv"
}
run tensor_fp32_vs_bf16_step0 tensor_mix_fp32/step0 tensor_mix_bf16/step0
run tensor_bf16_vs_fp32_step2 tensor_mix_bf16/step2 tensor_mix_fp32/step2
run tensor_fp32_vs_fp32_step1 tensor_mix_fp32/step1 tensor_mix_fp32/step1
run stat_L1_blowup_vs_fp32_step2 stat_L1_blowup/step2 stat_mix_fp32/step2
rm -rf "$OUT"
