"""The fixed panes of the main screen. Each posts messages (`tuidebug.tui.messages`) to the
App; none imports another.

Modules (this docstring is the table of contents; the package imports nothing):
- `command_line`: The command line (`:`): tfdbg's commands typed in the TUI, their output in
  a pane below.
- `command_output`: The command line's output pane: tfdbg's command output, wrapped at its
  width, its links (nodes and tensors) and the search of it (`/regex`).
- `header`: The header: which session this is, where the run stands, and what is loading.
- `hit_list`: The hit list: watchpoint hits grouped by watchpoint, in execution order, with
  filters.
- `node_details`: Node details: what a node is, where its data comes from and goes, and its
  source stack.
- `scope_tree`: The scope tree: graph selector, node-type filter, name filter and a lazily
  expanded tree.
- `stack_list`: The stack pane: the selected node's source stack, every source line of the
  graph with a search box, and the nodes created at the chosen line.
"""
