"""The drawing behind plots/simloop_plot.py: a module per family of plot
kinds, and the helpers they share (rows, --where, colours, axes, --describe,
safe outputs). simloop_plot.py parses the arguments and picks the kind."""
