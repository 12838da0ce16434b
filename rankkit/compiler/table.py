"""Kernel calls compiled ahead of time: (module, kernel, argument key) as
rankkit.compiler.dispatch.arg_key gives it. Written by
`python -m rankkit.warmup --record`; do not edit by hand."""

CALLS = [
    ('rankkit.io.parse', '_count_range', (('|u1', 1, 1, True, True), ('<i8', 1, 1, True, True), '|b1', ('<i8', 2, 1, True, True), '<i8', '<i8')),
    ('rankkit.io.parse', '_fix_chunk_starts', (('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), '<i8')),
    ('rankkit.io.parse', '_parse_range', (('|u1', 1, 1, True, True), ('<i8', 1, 1, True, True), '|b1', '|b1', ('<i8', 2, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('|u1', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 2, 1, True, True), ('<i8', 2, 1, True, True), ('<i8', 2, 1, True, True), ('<i8', 2, 1, True, True), '<i8', '<i8')),
    ('rankkit.io.parse', 'chunk_bounds', (('|u1', 1, 1, True, True), '<i8')),
    ('rankkit.io.parse', 'query_blocks', (('<i8', 1, 1, True, True),)),
    ('rankkit.metrics.kernels', 'metrics_range', (('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<i8', 1, 1, True, True), '|b1', ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<i8', ('<f8', 1, 1, True, True), '<i8', '<i8', ('<i8', 1, 1, True, True), '<i8', '<f8', '<i8', '<i8', '<f8', ('<f8', 2, 1, True, True), '<i8', '<i8')),
    ('rankkit.objectives.squared_hinge', '_fun_grad_range', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<f8', '|b1', ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<i8', '<i8')),
    ('rankkit.objectives.squared_hinge', '_hess_vec_range', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<f8', '<i8', '<i8')),
    ('rankkit.objectives.squared_hinge', '_sort_range', (('<f8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('|u1', 1, 1, True, True), ('<i8', 1, 1, True, True), '<i8', '<i8')),
    ('rankkit.objectives.squared_hinge', '_sum_in_order', (('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True))),
    ('rankkit.solvers._sgd_kernels', 'build_index', (('<f8', 1, 1, True, True), ('<i8', 1, 1, True, True))),
    ('rankkit.solvers._sgd_kernels', 'run_spd', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), '<i8', '<i8', '<i8', '<f8', '<f8', '<f8', '<i8', '<i8', '<i8', ('<f8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<i8')),
    ('rankkit.sorting', 'longest', (('<i8', 1, 1, True, True), '<i8', '<i8')),
    ('rankkit.sorting', 'query_levels', (('<f8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<i8', 1, 1, True, True))),
    ('rankkit.sparse', '_matvec_rows', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<i8', '<i8')),
    ('rankkit.sparse', '_matvec_rows', (('<f8', 1, 1, True, True), ('<u2', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True), '<i8', '<i8')),
    ('rankkit.sparse', '_rmatvec_chunks', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 2, 1, True, True), '<i8', '<i8', '<i8')),
    ('rankkit.sparse', '_rmatvec_chunks', (('<f8', 1, 1, True, True), ('<u2', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 2, 1, True, True), '<i8', '<i8', '<i8')),
    ('rankkit.sparse', '_rmatvec_serial', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True))),
    ('rankkit.sparse', '_rmatvec_serial', (('<f8', 1, 1, True, True), ('<u2', 1, 1, True, True), ('<i8', 1, 1, True, True), ('<f8', 1, 1, True, True), ('<f8', 1, 1, True, True))),
    ('rankkit.sparse', 'column_sumsq', (('<f8', 1, 1, True, True), ('<i4', 1, 1, True, True), ('<f8', 1, 1, True, True))),
    ('rankkit.sparse', 'column_sumsq', (('<f8', 1, 1, True, True), ('<u2', 1, 1, True, True), ('<f8', 1, 1, True, True))),
    ('rankkit.sparse', 'ignored_entries', (('<i4', 1, 1, True, True), '<i8')),
    ('rankkit.sparse', 'ignored_entries', (('<u2', 1, 1, True, True), '<i8')),
    ('rankkit.sparse', 'rmatvec_chunks', ('<i8', '<i8')),
    ('rankkit.sparse', 'sum_chunks', (('<f8', 2, 1, True, True), ('<f8', 1, 1, True, True))),
    ('rankkit.stats', '_count_extreme_rows', (('<f8', 1, 1, True, True), ('<u8', 2, 1, True, True), '<f8', '<i8', '<i8')),
    ('rankkit.stats', '_sequential_sum', (('<f8', 1, 1, True, True),)),
]
