"""Which file belongs to which rank, graph and iteration: the dump root, sync and async ranks,
iteration folders, graph history, graphs from names, the tensor index.

Modules (this docstring is the table of contents; the package imports nothing):
- `async_rank`: Ascend asynchronous dump layouts (issue 16 item 2): no `rank_N/` folder, no
  graph file.
- `errors`: The one exception a dump can raise when nothing in it is usable.
- `graph_history`: The graph history of one rank (spec §5.5): in which iterations each root
  graph ran, read from `execution_order/ms_global_execution_order_graph_<id>.csv`, and
  MindInsight's consistency rule that decides whether the rank's step count and graph runs
  may trust it.
- `iteration_folder`: One iteration (or `constants/`) folder of a dump, listed once: its
  tensor files by name, its `statistic.csv`, its overflow records, and what could not be
  read.
- `name_graph`: A graph built from the operator names of a dump that has no graph file
  (Ascend asynchronous layouts, issue 16 item 2).
- `root`: `DumpLayout`: the dump root and its ranks (spec §5.5 discovery, first step).
- `sync_rank`: Dump discovery (spec §5.1, §5.5): ranks, settings, graph files, dumped
  iterations, execution order, graph history, step count, and the cached listing of tensor
  files.
- `tensor_index`: Joins tensor files to graph nodes (spec §5.2, §5.2a, fixtures/README.md).
"""
