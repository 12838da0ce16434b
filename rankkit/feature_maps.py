"""Non-linear RankSVM through an explicit feature map (Chapelle & Keerthi Sect. 6.3).

With landmarks L (m documents) and K_mm = K(L, L) = U diag(lam) U', the kernel PCA map

    Phi(x) = diag(lam)^-1/2 U' k(x),    k(x) = (K(l_1, x), ..., K(l_m, x))

gives Phi(X) Phi(X)' = K_nm K_mm^+ K_mn: the exact kernel matrix when the landmarks are all
training documents (the empirical kernel map), its Nystrom approximation otherwise. Any linear
solver then trains on Phi(X). The score of the trained w is w' Phi(x) = beta' k(x) with
beta = U diag(lam)^-1/2 w, so a model only needs the landmarks and beta, and prediction evaluates
the kernel between a document and the landmarks.

Kernels (libsvm's definitions and defaults: gamma = 1 / n_features, degree 3, coef0 0):
    linear  x.z
    poly    (gamma x.z + coef0)^degree
    rbf     exp(-gamma ||x - z||^2)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rankkit.data import Dataset
from rankkit.errors import UsageError

KERNELS = ("linear", "poly", "rbf")
EXACT_MAP_MAX = 4000  # largest n for the exact empirical kernel map (K is n x n, eigh is O(n^3))
EIG_RTOL = 1e-10  # eigenvalues below this fraction of the largest are dropped (pseudo-inverse)
_ROWS_PER_BLOCK = 4096


@dataclass(frozen=True)
class MercerKernel:
    name: str
    gamma: float
    degree: int = 3
    coef0: float = 0.0

    def params(self) -> dict:
        out = {"kernel": self.name}
        if self.name in ("poly", "rbf"):
            out["gamma"] = self.gamma
        if self.name == "poly":
            out.update({"degree": self.degree, "coef0": self.coef0})
        return out

    def matrix(self, A, B) -> np.ndarray:
        """Dense K(A, B) for scipy CSR matrices A (rows) and B (columns), in row blocks."""
        out = np.empty((A.shape[0], B.shape[0]))
        Bt = B.T.tocsc()
        nb = np.asarray(B.multiply(B).sum(axis=1)).ravel() if self.name == "rbf" else None
        for s in range(0, A.shape[0], _ROWS_PER_BLOCK):
            Ab = A[s : s + _ROWS_PER_BLOCK]
            G = np.asarray((Ab @ Bt).todense())
            if self.name == "poly":
                with np.errstate(over="ignore", under="ignore"):  # judged by fit_map (finite, not all 0)
                    G = (self.gamma * G + self.coef0) ** self.degree
            elif self.name == "rbf":
                na = np.asarray(Ab.multiply(Ab).sum(axis=1)).ravel()
                G = np.exp(-self.gamma * np.maximum(na[:, None] + nb[None, :] - 2.0 * G, 0.0))
            out[s : s + Ab.shape[0]] = G
        return out


def make_kernel(name: str, n_features: int, gamma: float | None, degree: int, coef0: float) -> MercerKernel:
    if name not in KERNELS:
        raise UsageError(f"unknown kernel '{name}' (known: {', '.join(KERNELS)})")
    return MercerKernel(name, float(gamma) if gamma is not None else 1.0 / max(n_features, 1), int(degree), float(coef0))


def choose_landmarks(n: int, m: int | None, seed: int) -> np.ndarray:
    """All documents (the exact empirical kernel map) or m of them uniformly without replacement."""
    if m is None:
        if n > EXACT_MAP_MAX:
            raise UsageError(
                f"the exact kernel map needs an n x n kernel matrix and n = {n} > {EXACT_MAP_MAX}: "
                "pass --landmarks m for a Nystrom approximation"
            )
        return np.arange(n, dtype=np.int64)
    if m >= n:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False)).astype(np.int64)


@dataclass
class KernelMap:
    kernel: MercerKernel
    landmarks: object  # scipy CSR, m x n_features
    projection: np.ndarray  # m x r: U diag(lam)^-1/2 of the kept eigenpairs

    def transform(self, X) -> np.ndarray:
        """Phi(X), dense n x r."""
        return self.kernel.matrix(X, self.landmarks) @ self.projection


def fit_map(X, kernel: MercerKernel, landmark_rows: np.ndarray) -> KernelMap:
    L = X[landmark_rows]
    Kmm = kernel.matrix(L, L)
    if not np.all(np.isfinite(Kmm)):
        raise UsageError(f"the {kernel.name} kernel overflows on the landmarks ({_described(kernel)} gives "
                         "values beyond a double): lower the degree or gamma")
    lam, U = np.linalg.eigh((Kmm + Kmm.T) / 2.0)
    keep = lam > EIG_RTOL * max(lam.max(initial=0.0), 1e-300)
    if not np.any(keep):
        if L.nnz == 0 or not np.any(L.data):
            raise UsageError("the kernel matrix of the landmarks is zero: every landmark row is empty")
        raise UsageError(f"the kernel matrix of the landmarks is zero although the landmarks are not: "
                         f"{_described(kernel)} underflows to 0; lower the degree or raise gamma or coef0")
    return KernelMap(kernel, L, U[:, keep] / np.sqrt(lam[keep]))


def _described(kernel: MercerKernel) -> str:
    if kernel.name == "poly":
        return f"(gamma x.z + coef0)^degree with gamma={kernel.gamma:g}, coef0={kernel.coef0:g}, degree={kernel.degree}"
    if kernel.name == "rbf":
        return f"exp(-gamma |x-z|^2) with gamma={kernel.gamma:g}"
    return "x.z"


def mapped_dataset(ds: Dataset, Phi: np.ndarray) -> Dataset:
    """ds with its features replaced by the dense map Phi (same labels and queries)."""
    n, r = Phi.shape
    return ds.with_changes(
        data=np.ascontiguousarray(Phi).ravel(),
        indices=np.tile(np.arange(r, dtype=np.int32), n),
        indptr=np.arange(0, n * r + 1, r, dtype=np.int64),
        n_features=r,
        docid_spans=None,
        docid_buf=None,
    )


def kernel_scores(kernel: MercerKernel, landmarks, beta: np.ndarray, X) -> np.ndarray:
    """beta' k(x) for every row of X (columns beyond the landmarks' are ignored)."""
    d = landmarks.shape[1]
    if X.shape[1] > d:
        X = X[:, :d]
    elif X.shape[1] < d:
        X = X.copy()
        X.resize((X.shape[0], d))
    out = np.empty(X.shape[0])
    for s in range(0, X.shape[0], _ROWS_PER_BLOCK):
        out[s : s + _ROWS_PER_BLOCK] = kernel.matrix(X[s : s + _ROWS_PER_BLOCK], landmarks) @ beta
    return out
