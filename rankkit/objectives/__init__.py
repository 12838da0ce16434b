"""The pairwise objectives the solvers minimise: value, gradient and Hessian-vector product of
0.5 ||w||^2 + C L(Xw) in O(n log n) per query (pairwise.py: PairwiseObjective over the losses of
squared_hinge.py and logistic.py; rescale.py: margin and slack rescaling; pairs.py: the explicit
pair list, for small data and for checking).

Layer: io and objectives (tests/test_architecture.py's LAYERS). It may import the kernels and data
(data, sparse, sorting, vectors, compiler) and the base; never solvers, paths, the use cases or a
face. Another module uses an objective through its public methods (scores, evaluate, gradient,
gradient_loss, hess_vec, hess_vec_loss, ...), never its private state.
"""
