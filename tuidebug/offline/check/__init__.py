"""Checking watchpoints over a dump: the checker (plan, run, merge), its unit of work, checks
from statistic.csv, and the Dask cluster runner.

Modules (this docstring is the table of contents; the package imports nothing):
- `checker`: The offline watchpoint checker: many watchpoints over many dump tensors, in
  parallel.
- `cluster`: Checking a dump on a Dask cluster: `tuidebug check --cluster` and
  `DumpAnalyzer.check_watchpoints(..., cluster=client)`.
- `cluster_connect`: Reaching a Dask cluster for a check: `--cluster tcp://host:8786` (a
  running scheduler, probed for Dask's handshake first) or `--cluster local[:N]` (a
  `LocalCluster` of worker processes on this machine).
- `msprobe`: Watchpoints checked on an msprobe dump's statistics (issue 29): each tensor
  record's Max, Min and Mean decided with MindSpore's math, as a statistic.csv row is.
- `statistic`: Watchpoints checked from `statistic.csv` alone (a statistic-only dump,
  `saved_data: "statistic"`, spec §5.1, §5.3): MindSpore's decision (spec §3.5) on the
  statistics a row holds, or the one statistic that is missing to decide it exactly.
- `tfdbg`: Watchpoints checked on a TensorFlow Debugger V2 dump (issue 32), from what its
  `tensor_debug_mode` recorded for each op output.
- `task`: Checking one tensor file against every watchpoint that watches it: the checker's
  unit of work, run by its threads (`offline/check/checker.py`).
"""
