"""The tensor pane and everything only it uses: drawing, formats, compare modes, find,
statistics, reads and saves.

Modules (this docstring is the table of contents; the package imports nothing):
- `canvas`: The two drawing surfaces of the tensor viewer: a number table and a half-block
  heatmap.
- `compare`: What the tensor view compares with besides the previous step: the same tensor
  on another rank (R), or any tensor the user names (D).
- `files`: Saving what the tensor view shows: the default file name and the `.npy` writer.
- `find`: The tensor view's find (`f`, `]`, `[`): what is looked for, what is known of it,
  and the scan a worker runs — everything of the feature except the widgets.
- `find_box`: The tensor view's find, its widget side: the find box, the highlight in the
  table, the search worker, and putting the cursor on a match.
- `format`: Textual-free helpers of the tensor viewer: slice geometry, cell formats,
  sampling, heatmap downsampling.
- `grid`: What the tensor view's table and heatmap draw, made from the tensor a mode shows,
  the slice and what is known of the whole tensor.
- `hit_note`: Above a tensor opened from a watchpoint hit: what the hit measured, and what
  to try.
- `inputs`: The tensor pane's one-line boxes: the slice (e) and tolerance (t) boxes of its
  bar, and those that open on a key: go to an element (i) and find (f).
- `jobs`: The tensor view's background work and the messages it answers with.
- `layout`: The tensor pane's frame: its CSS, its help, what it says before a tensor, and
  the children a tensor needs, mounted (with their modules) when the first one comes.
- `modes`: What the tensor view compares the tensor shown with, which of the three it
  shows, and why a reference cannot be compared.
- `reads`: Reading a tensor or a node output's one-line summary from the session, for the
  App's workers: plain functions (no widgets), so what the tensor view and the node details
  are told in each case (no value, step 0, an unreadable file) is tested without Pilot.
- `requests`: Opening a tensor in the tensor view and reading the selected node's output
  summaries, each in a thread worker whose newer request cancels the older one's work.
- `statistics_panel`: The tensor view's footer: the statistics of what it shows, over the
  whole tensor.
- `text`: The tensor view's lines of text, built from plain values: the title, the heatmap
  legend, the status line under the grid, the statistics panel, and the sentences for a go-
  to that misses or a previous step that cannot be compared.
- `view`: The tensor slice viewer: slice box, number table / heatmap, statistics, compare,
  save.
"""
