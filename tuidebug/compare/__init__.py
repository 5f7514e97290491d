"""Compare two runs: where does the target first stop matching the golden? (issue 30)

- `metrics`: msprobe's metrics, number for number: Cosine, EucDist, MaxAbsErr,
  MaxRelativeErr, the one/five-thousandth error ratios of two tensors, and the
  Max/Min/Mean/L2norm diffs and relative errors of two statistics records
- `fused`: a tensor pair's metrics, statistics, NaN/Inf flags and scale in one chunked
  pass over large tensors (memory of a few chunks), msprobe's whole-array arithmetic for
  small ones
- `tolerance`: when a compared pair is a divergence: thresholds that know the dtypes, and
  the run's precision when the two runs differ in it (autocast against fp32)
- `pairing`: which tensor of the target goes with which of the golden, in execution order:
  MindSpore synchronous dumps and tuidebug.torch dumps (by name within one version; across
  versions by graph order, scope, type and order), tensor files and statistic.csv rows;
  msprobe dumps (by msprobe's tensor name per step and rank; tensor values from `.pt`/`.npy`
  files, statistics, non-tensor arguments)
- `report`: the compare itself (pairs → rows with their metrics and verdict, the summary,
  the first divergence and its chain) and msprobe compare's CSV layout
- `run`: `compare_dumps(TARGET, GOLDEN, …)`, one compare of two folders whatever their kind
  (what the CLI, `DumpAnalyzer.compare` and the TUI call), and its `CompareResult`

Nothing here imports Textual: the CLI (`tuidebug compare`) prints what report.py returns.
"""
