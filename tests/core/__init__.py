"""The Textual-free core: graph, tensors, the condition catalogue and scan engine, watchpoints and what both sessions share."""
