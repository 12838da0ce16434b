"""The pair losses, one class per loss, over the margin t = y_i - y_j of a preference pair (i above j).
Every objective of the family (pairwise.py's sweeps over one sort per query, pairs.py's explicit
list) takes one of these for its per-pair math, as liblinear's l2r_l2_svc_fun and l2r_lr_fun each
add only theirs to the data handling of their base:

    terms(margin)     the loss as sum_k coef_k max(0, margin_k - t)^p, p = 2 (squared) or 1 (hinge):
                      what the O(n log n) sweeps (squared_hinge.py) add up over one sort
    code              the loss's code in the explicit pair kernel (pairs.pair_fun_grad: its exact
                      value and derivatives, held to tests/reference.py's pair_loss)
    second_order      False for a loss with no Hessian (hinge: value and subgradient, the bundle method)
    margin_rescaling  whether the O(n log n) objective can move the margin (rescale.py: a margin
                      other than 1 is a sum of shifted terms only for a single squared or plain hinge)

LOSSES maps the names users type to the classes; `pair_loss(name)` makes one (an unknown name:
ValueError "unknown loss 'name'").
"""

from __future__ import annotations

from rankkit.objectives.logistic import DEFAULT_PIECES, DEFAULT_RANGE, piecewise_quadratic


class PairLoss:
    """A pair loss (see the module docstring); subclasses set the class attributes and terms()."""

    name = ""
    code = -1
    second_order = True
    margin_rescaling = True

    def terms(self, margin: float = 1.0) -> list[tuple[float, float, bool]]:
        """[(coef, margin, squared)]: the loss at the pair margin `margin` as a weighted sum of
        max(0, margin_k - t)^2 (squared) or max(0, margin_k - t) terms."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredHinge(PairLoss):
    """max(0, 1 - t)^2: RankSVM's L2 loss (liblinear's l2r_l2_svc_fun)."""

    name, code = "squared-hinge", 0

    def terms(self, margin=1.0):
        return [(1.0, margin, True)]


class Huber(PairLoss):
    """Chapelle & Keerthi's decomposition max(0, 1 - t)^2 - max(0, -t)^2: quadratic for 0 <= t < 1,
    linear 1 - 2t below 0."""

    name, code = "huber", 1
    margin_rescaling = False

    def terms(self, margin=1.0):
        return [(1.0, 1.0, True), (-1.0, 0.0, True)]


class Hinge(PairLoss):
    """max(0, 1 - t): value and subgradient only (the bundle method)."""

    name, code = "hinge", 3
    second_order = False

    def terms(self, margin=1.0):
        return [(1.0, margin, False)]


class Logistic(PairLoss):
    """log(1 + exp(-t)), RankNet's: exact in the explicit pair kernel; in the O(n log n) sweeps its
    piecewise-quadratic approximation sum_m a_m max(0, c_m - t)^2 (logistic.py: `pieces` + 1 terms
    on [-T, T])."""

    name, code = "logistic", 2
    margin_rescaling = False

    def __init__(self, pieces: int = DEFAULT_PIECES, T: float = DEFAULT_RANGE):
        self.pieces, self.T = pieces, T

    def terms(self, margin=1.0):
        return [(a_m, c_m, True) for c_m, a_m in zip(*(v.tolist() for v in piecewise_quadratic(self.pieces, self.T)))]

    def __repr__(self) -> str:
        return f"Logistic(pieces={self.pieces}, T={self.T})"


LOSSES: dict[str, type[PairLoss]] = {cls.name: cls for cls in (SquaredHinge, Huber, Hinge, Logistic)}


def pair_loss(loss: str | PairLoss) -> PairLoss:
    """The loss of this name (or the loss itself)."""
    if isinstance(loss, PairLoss):
        return loss
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}")
    return LOSSES[loss]()


def margin_rescaling_losses() -> str:
    """The losses whose margin the O(n log n) objective rescales, for a message."""
    return " and ".join(name for name, cls in LOSSES.items() if cls.margin_rescaling)
