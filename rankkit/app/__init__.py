"""The command line's use cases over the core (rankkit.training, the readers and writers), and
report.py, how their results are shown."""
