"""VSGP beside FITC for 2-D classification: presets, local covariances from clusters, fits on a grid.

Pure computation for the "VSGP" page (app/vsgp_page.py), callable without a browser.

**Model** (paper 002, sec. 3; :mod:`qpviz.inference.inducing`). M basis points b_j, each the
centre of a Gaussian blur N(x | b_j, C_j): the sparse posterior is

    q(f) proportional to GP(f | 0, K) prod_j N(u_j | int f(x) N(x | b_j, C_j) dx, lambda_j^-1)      (eq. 5)

and for the RBF kernel the blurred cross-covariance is the Gaussian

    K~(x, b_j) = s2 sqrt(|Lambda| / |Lambda + C_j|) exp(-1/2 (x - b_j)^T (Lambda + C_j)^-1 (x - b_j))   (eq. 14).

C_j = 0 is FITC on the same centres (pseudo-points at b_j). The sites are fitted by EP or QP
(:func:`qpviz.inference.site_fit.fit_power_ep`, alpha = 1).

**Local covariances from the data** (learning them from the evidence is not in the library yet):
each basis point's Voronoi cluster (the training inputs nearer to b_j than to any other centre;
the K-means clusters when the centres are K-means centres) has the sample covariance S_j, and

    C_j = blur * S_j                       (full)
    C_j = blur * (tr S_j / 2) * I          (spherical: the same mean variance in each direction)

(:func:`local_covariances`); blur = 0 gives FITC. A cluster of fewer than two points has S_j = 0.

* :func:`make_preset`: paper 002's "circle" (one class inside a circle, the other around it) and
  "two_gaussians" (sec. 5), and "moons" (from :mod:`qpviz.gpdemo.twod`);
  :func:`held_out_set`: a fixed test set of the same preset (seeded).
* :func:`fit_sparse_grid`: one fit (VSGP or FITC), its maps on the grid and its test error,
  NTLL and log evidence; :func:`fit_key` is its cache key (the page's model keeps fits in a
  :class:`qpviz.gpdemo.jobs.LRUCache`).
* :func:`ellipses`: each C_j as a 2-standard-deviation ellipse (width, height, angle) to draw.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from numba.core.errors import NumbaWarning
from scipy.special import log_ndtr

from qpviz._blas import small_problem_threads
from qpviz.gpdemo import twod
from qpviz.inference.inducing import kmeans_inducing
from qpviz.inference.site_fit import fit_power_ep
from qpviz.kernels import RBF

__all__ = ["PRESETS", "SHAPES", "N_TEST", "TEST_SEED", "ELLIPSE_SD", "make_preset", "held_out_set",
           "kmeans_centres", "cluster_covariances", "local_covariances", "ellipses", "SparseGridFit",
           "fit_sparse_grid", "fit_key"]

#: Covariance shapes of the basis points' blurs.
SHAPES = ("spherical", "full")
#: Size and seed of the held-out set (the same for every training seed: seeds are at most 10 000).
N_TEST = 1000
TEST_SEED = 987_654_321
#: An ellipse is drawn at this many standard deviations of its C_j.
ELLIPSE_SD = 2.0


def _circle(n: int, rng: np.random.Generator, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Uniform points in [-2.6, 2.6]^2; class +1 inside the circle of radius 1.5 about the origin,
    class -1 around it (paper 002 sec. 5's circle); ``noise`` is the fraction of labels flipped."""
    X = rng.uniform(-2.6, 2.6, (n, 2))
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.5, 1.0, -1.0)
    flip = rng.uniform(size=n) < noise
    y[flip] = -y[flip]
    if np.all(y == y[0]):  # tiny n can miss a class: the classifier needs both
        y[0] = -y[0]
    return X, y


#: Preset name -> (one line saying what it shows).
PRESETS = {
    "circle": "paper 002's circle: one class inside a circle, the other around it; a closed boundary",
    "two_gaussians": "paper 002's two Gaussian classes: an overlap where p is near 1/2",
    "moons": "two interleaved half circles: a curved boundary that centres must follow",
}


def make_preset(name: str, n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs X (n, 2) and labels y in {-1, +1} of preset ``name`` (:data:`PRESETS`), drawn with ``seed``."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2 (one point per class at least); got {n!r}")
    if name == "circle":
        return _circle(int(n), np.random.default_rng(seed), 0.03)
    return twod.make_preset("gaussians" if name == "two_gaussians" else name, int(n), seed)


def held_out_set(name: str, seed: int = TEST_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The fixed test set of preset ``name``: N_TEST points drawn as the training set, with ``seed``."""
    return make_preset(name, N_TEST, seed)


def kmeans_centres(X, M: int, seed: int = 0) -> np.ndarray:
    """M basis points: K-means centres of X (:func:`qpviz.inference.inducing.kmeans_inducing`)."""
    return kmeans_inducing(X, M, seed)


def cluster_covariances(X, centres) -> np.ndarray:
    """(M, 2, 2): the sample covariance S_j of the inputs whose nearest centre is b_j (their
    K-means cluster for K-means centres); 0 for a cluster of fewer than two points."""
    X, centres = np.asarray(X, float), np.asarray(centres, float)
    nearest = np.argmin(((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2), axis=1)
    S = np.zeros((len(centres), X.shape[1], X.shape[1]))
    for j in range(len(centres)):
        members = X[nearest == j]
        if len(members) >= 2:
            S[j] = np.cov(members, rowvar=False, bias=True)
    return S


def local_covariances(X, centres, blur: float, shape: str = "full") -> np.ndarray:
    """VSGP's C_j (module docstring): blur * S_j (``"full"``, (M, 2, 2)) or blur * tr(S_j) / 2
    (``"spherical"``, (M,): C_j = c_j I). ValueError for a negative or non-finite blur or an
    unknown shape."""
    blur = float(blur)
    if not np.isfinite(blur) or blur < 0:
        raise ValueError(f"the blur must be a finite number >= 0 (0 = FITC); got {blur!r}")
    if shape not in SHAPES:
        raise ValueError(f"the covariance shape must be one of {SHAPES}; got {shape!r}")
    S = cluster_covariances(X, centres)
    if shape == "spherical":
        return blur * np.trace(S, axis1=1, axis2=2) / S.shape[1]
    return blur * S


def ellipses(centres, covariances, sd: float = ELLIPSE_SD) -> dict:
    """Bokeh ``ellipse`` columns of the ``sd``-standard-deviation contours of N(b_j, C_j): x, y,
    width and height (full axes, 2 sd sqrt(eigenvalue)), angle (radians) of the first axis (the
    eigenvector of the larger eigenvalue). Spherical C_j ((M,)) give circles."""
    centres = np.asarray(centres, float)
    C = np.asarray(covariances, float)
    if C.ndim == 1:
        C = C[:, None, None] * np.eye(2)
    values, vectors = np.linalg.eigh(C)  # ascending eigenvalues, eigenvectors in columns
    values = np.maximum(values, 0.0)
    major = vectors[:, :, 1]
    return {"x": centres[:, 0], "y": centres[:, 1], "width": 2 * sd * np.sqrt(values[:, 1]),
            "height": 2 * sd * np.sqrt(values[:, 0]), "angle": np.arctan2(major[:, 1], major[:, 0])}


@dataclass
class SparseGridFit:
    """One sparse fit's maps on the grid ``x1`` x ``x2`` (arrays indexed [x2 index, x1 index], as
    :class:`qpviz.gpdemo.twod.GridFit`) and its numbers.

    ``proba`` = p(y_* = +1 | x_*), ``mean`` / ``var`` the latent marginals; ``test_error`` the
    fraction of the held-out set on the wrong side of p = 1/2; ``ntll`` = -mean log p(y_t | x_t)
    over it; ``log_evidence`` the EP / QP energy's log Z; ``seconds`` = (fit, prediction).
    """

    x1: np.ndarray
    x2: np.ndarray
    proba: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    test_error: float
    ntll: float
    log_evidence: float
    converged: bool
    seconds: tuple
    notes: list = field(default_factory=list)


def fit_sparse_grid(X, y, kernel: RBF, centres, covariances, method: str, grid, X_test, y_test) -> SparseGridFit:
    """Fit EP or QP (``method``) on the sparse prior with basis points ``centres`` and local
    covariances ``covariances`` (None: FITC) to (X, y), probit likelihood, and predict on
    ``grid`` = (x1, x2, points) (:func:`qpviz.gpdemo.twod.make_grid`) and at the test inputs.

    Probit predictive: p(y | x_*) = Phi(y m_* / sqrt(1 + v_*)), logged by ``log_ndtr`` (no
    underflow for confident wrong predictions). Warnings (no convergence, jitter) go to ``notes``.
    """
    X, y = twod.check_data(X, y)
    x1, x2, points = grid
    start = time.perf_counter()
    # one BLAS thread: every product here has M (<= a few dozen) rows, and OpenBLAS's threads
    # spin-waiting for a busy core made each M x M triangular solve 100 times slower (26 ms, measured)
    with small_problem_threads(len(centres)), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", NumbaWarning)  # numba's notes on its own features, not the fit's
        posterior = fit_power_ep(X, y, "probit", kernel, method=method, inducing=np.asarray(centres, float),
                                 inducing_cov=covariances)
        fitted = time.perf_counter()
        # one prediction for the grid and the test set: the blurred cross-covariances cost per call
        mean, var = posterior.predict_f(np.vstack([points, X_test]))
    g = len(points)
    z = mean / np.sqrt(1.0 + var)
    shape = (len(x2), len(x1))
    test_z = np.asarray(y_test, float) * z[g:]
    return SparseGridFit(
        x1=x1, x2=x2, proba=np.clip(np.exp(log_ndtr(z[:g])), 0.0, 1.0).reshape(shape),
        mean=mean[:g].reshape(shape), var=var[:g].reshape(shape),
        test_error=float(np.mean(test_z <= 0.0)), ntll=float(-np.mean(log_ndtr(test_z))),
        log_evidence=float(posterior.log_marginal_likelihood), converged=bool(posterior.converged),
        seconds=(fitted - start, time.perf_counter() - fitted),
        notes=[f"{method.upper()}: {w.message}" for w in caught])


def fit_key(X, y, kernel, centres, covariances, method, grid, X_test) -> tuple:
    """The cache key of a :func:`fit_sparse_grid` call (its inputs as bytes; the test labels follow
    from the test inputs' preset): equal keys are equal fits."""
    C = None if covariances is None else np.asarray(covariances, float).tobytes()
    x1, x2, _ = grid
    return (np.asarray(X, float).tobytes(), np.asarray(y, float).tobytes(), repr(kernel),
            np.asarray(centres, float).tobytes(), C, method, x1.tobytes(), x2.tobytes(), np.asarray(X_test).tobytes())
