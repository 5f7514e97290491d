"""Compare two runs: where does the target first stop matching the golden? (issue 30)

metrics.py    msprobe's metrics, number for number: Cosine, EucDist, MaxAbsErr,
              MaxRelativeErr, the one/five-thousandth error ratios of two tensors, and the
              Max/Min/Mean/L2norm diffs and relative errors of two statistics records
tolerance.py  when a compared pair is a divergence: thresholds that know the dtypes
pairing.py    which tensor of the target goes with which of the golden, in execution order:
              MindSpore synchronous dumps (same version, by rank/graph/node/slot/iteration)
              and msprobe dumps (by msprobe's tensor name, per step and rank)
report.py     the compare itself (pairs → rows with their metrics and verdict, the summary)
              and msprobe compare's CSV layout

Nothing here imports Textual: the CLI (`tuidebug compare`) prints what report.py returns.
"""
