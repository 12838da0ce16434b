"""The command line's commands, part of the CLI face (with rankkit/cli.py, rankkit/__main__.py and
rankkit/commands.py): train.py, predict.py, evaluate.py, path.py, convert.py, experiment.py, each
a plain function over the use cases (rankkit.training, experiments, evaluation, selection) and
the readers and writers of io/; their results are shown by rankkit.report.

Layer: a face, on top (tests/test_architecture.py's LAYERS). It may import every layer below it;
never another face: not the Python estimators, not rankkit.distributed (the CLI reaches the Dask
face only by name, through rankkit.commands).
"""
