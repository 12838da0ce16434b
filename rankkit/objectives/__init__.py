"""The pairwise objectives the solvers minimise, as a family: value, gradient and Hessian-vector
product of 0.5 ||w||^2 + C L(Xw). losses.py: one class per pair loss (SquaredHinge, Huber, Hinge,
Logistic; LOSSES = {name: class}), each its per-pair math (the terms the sweeps add up, its code in
the pair kernel, whether it has a Hessian and takes a moved margin). base.py: PairObjective, what every objective shares
(the dataset's arrays, the products with X, the protocol scores / evaluate / gradient / hess_vec
over a loss in score space). Two structures over it: pairwise.py's PairwiseObjective (one sort per
query, a sweep per term of squared_hinge.py's kernels: O(n log n); rescale.py's margin and slack
rescaling as more sweeps) and pairs.py's ExplicitPairObjective (the explicit pair list: any per-pair
cost, the exact logistic loss; for small data and for checking). logistic.py: the logistic loss's
piecewise-quadratic approximation.

Layer: io and objectives (tests/test_architecture.py's LAYERS). It may import the kernels and data
(data, sparse, sorting, vectors, compiler) and the base; never solvers, paths, the use cases or a
face. Another module uses an objective through its public methods and attributes (scores,
evaluate, gradient, gradient_loss, hess_vec, hess_vec_loss, rmatvec, loss_y, hess_vec_y, gy,
loss_value, n_active, ...), never its private state.
"""
