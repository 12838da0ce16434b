"""Files in and out: files.py (open any input: path, .gz/.bz2/.xz, -, URL), groups.py
(FILE.query/.group), svmlight.py + parse.py (read_svmlight, the one way every face opens data; the
byte kernels), blocks.py (a file's queries chunk by chunk, for the streaming solver), parts.py
(PARTS: several files as one), model.py (rankkit's model files), foreign_models.py (svm_rank,
liblinear, sofia-ml), trec.py (runs and qrels), query_weights.py, output.py and atomic.py (atomic
writes; check_output, the one output guard).

Layer: io and objectives (tests/test_architecture.py's LAYERS). It may import the kernels and data
(data, sparse, sorting, metrics, compiler) and the base (errors, config, console, threads, text,
...); never solvers, paths, the use cases or a face. How tied scores are ordered (trec_eval's
docid tiebreak) is a convention of grading: rankkit.metrics.ties, not here.
"""
