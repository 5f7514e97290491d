"""One dump file format per module, each opened safely (regular files only, bounded reads).
Nothing here knows which rank or iteration a file belongs to.

Modules (this docstring is the table of contents; the package imports nothing):
- `budget`: What the `.bin` headers of one dump may cost, over all its files (tensors and
  header bytes per iteration and per dump).
- `bin`: Reading Ascend asynchronous dump `.bin` files (`file_format: "bin"`) without CANN.
- `bin_tensors`: `.bin` dump files (Ascend `file_format: "bin"`) as tensors of the dump's
  index.
- `execution_order`: Readers for `execution_order/` (spec §5.4): the kernel execution order
  of a graph and the graph execution history (the iterations in which a root graph ran).
- `graphs`: A dump's graph files: `graphs/*.pb` (a serialized `ModelProto`) and the `.ir`
  text beside it, read into a `core.Graph` (spec §5.6).
- `listing`: Listing the folders of a dump without following what must not be followed.
- `metadata`: What `.dump_metadata/` says about a dump (spec §5.1): net name, MindSpore
  version, device, sync or async, file format.
- `msprobe`: msprobe dumps (issue 29): the root, `dump.json`, `stack.json` and
  `construct.json`, read bounded and safely.
- `msprobe_json`: msprobe's `dump.json` read as a stream of calls in chunks (memory one
  record, speed the stdlib's C scanner), never as one document.
- `msprobe_root`: Finding an msprobe dump's steps and ranks from its folders alone (what
  `tuidebug offline` asks before its first frame, without the readers of `msprobe`).
- `msprobe_rule`: msprobe `overflow_check`'s own anomaly rule on one raw `dump.json`
  record (ignored names, top-level inputs and outputs only, parameters not inputs), and
  its cross-rank pass naming the rank where a NaN/Inf carried by a collective began.
- `names`: The grammar of MindSpore dump file names (spec §5.1, §5.2).
- `names_24`: The names MindSpore 2.4+ gives a kernel's dump files (spec §5.2a).
- `npy`: Reading one dump tensor file safely: header first, then a read-only memory map.
- `overflow`: Ascend operator-overflow records (issue 16 item 4; spec §5.2 "Operator
  overflow").
- `pt`: Reading a PyTorch `.pt` tensor file (a `torch.save` zip) without torch and without
  running its pickle (issue 29: msprobe's tensor dumps).
- `regular_file`: Opening dump files that may not be files: the one way every dump file is
  opened.
- `tfdbg`: TensorFlow Debugger V2 dumps (issue 32): the six TFRecord files of one run,
  read bounded and safely with protobuf alone (no TensorFlow).
- `tfdbg_values`: A tfdbg dump's recorded tensor values (FULL_TENSOR) read by offset from
  its own records, named by a reference path.
- `tfdbg_wire`: A clean health-summary trace told from its serialized bytes, without
  protobuf (the fast path of `check --watch TO`).
- `statistic_csv`: `statistic.csv` (spec §5.3): both column layouts, columns mapped by
  header name.
"""
