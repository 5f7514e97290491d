"""The nodes around one: downstream (`O`), the neighbourhood graph (`G`) and the source view;
the layouts they draw are Textual-free.

Modules (this docstring is the table of contents; the package imports nothing):
- `downstream`: What a node feeds: every node downstream of it, nearest first, with the hits
  of each.
- `downstream_screen`: Where a node's values go (`O`): every node downstream of it, nearest
  first, hits marked.
- `graph_layout`: A node's neighbourhood drawn as a small DAG in box-drawing characters (no
  Textual here).
- `graph_screen`: The neighbourhood graph (`G`): the selected node with its inputs above and
  consumers below, drawn as a small DAG (MindInsight's graph, in a terminal).
- `neighbourhood`: Which nodes the graph view (`G`) draws around one: the centre, its
  inputs and consumers a few steps away, closed scopes as one box (no Textual here).
- `opener`: The screens that show the nodes around one and go to the node chosen there:
  downstream of the selected hit or node (`O`), the graph around it (`G`), and a stack
  line's source file with the nodes each line created (Enter in the stack list).
- `source_screen`: The source view: a file of the graph's stacks, each line with the nodes
  it created (tfdbg's `ps`), opened from the stack pane on one of its lines.
"""
