"""The "Sparse" page's computation: presets, one fit per method on the same pseudo-inputs, and the
Power-EP evidence over alpha (paper 001, the pseudo-point tutorial; Bui, Yan and Turner 2017).

Every call to the library goes through :func:`fit_sparse` (the lead swaps in ``qpviz.fit(...,
inducing=Z, alpha=...)`` once the sparse methods are reachable from it):

=============  ===========================================  =========================================
method         regression (Gaussian likelihood)             classification (probit)
=============  ===========================================  =========================================
``exact``      dense GP (``qpviz.fit(method="ep")``: exact    dense EP
               for a Gaussian likelihood)
``fitc``       Power EP, alpha = 1 (= FITC exactly)          Power EP, alpha = 1 (FITC-EP)
``vfe``        Power EP, alpha = 1e-6 (= VFE within 1e-5)    Power EP, alpha = 1e-6 (the VFE limit)
``dtc``        closed form (``qpviz.inference.               not defined (Gaussian likelihood only)
``pitc``       sparse_regression``) if present, else
               "not available yet"
``power_ep``   Power EP(alpha), EP or QP projection          Power EP(alpha), EP or QP projection
=============  ===========================================  =========================================

The alpha slider runs from 0 to 1; the power used is ``max(alpha, VFE_ALPHA)`` (:func:`power_of`):
alpha = 0 on the slider *means* VFE, reached as Power EP's alpha -> 0 limit (alpha = 1e-6 agrees
with the VFE bound within 1e-5).

Warm starts: a slider step or the drag of one pseudo-input moves the Power-EP fixed point only a
little, so :func:`fit_sparse` takes the sites (tau, nu) of an earlier fit of the same data,
likelihood, kernel, method and projection (``start``; :attr:`SparseFit.sites`) and converges from
there in fewer sweeps to the same fixed point (within the sweep tolerance, 1e-6). After two fits
at different alphas on the same Z, :class:`SiteTrail` starts the next alpha from the secant through
their sites (the fixed point moves smoothly with alpha: one sweep instead of four on "sine
boundary"); the evidence curve chains its alphas the same way. After a drag, Power EP starts from
its old sites moved as the same drag moved the VFE (alpha -> 0) and FITC (alpha = 1) sites, mixed by
alpha (:func:`moved_start`: 1-2 sweeps instead of 3-6).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

import qpviz
from qpviz.gpdemo import oned
from qpviz.inference.inducing import kmeans_inducing
from qpviz.inference.site_fit import fit_power_ep
from qpviz.likelihoods import registered

try:  # S1's closed forms (FITC, PITC, DTC, VFE); DTC and PITC are shown only when they exist
    from qpviz.inference.sparse_regression import fit_sparse_regression
except ImportError:  # pragma: no cover - depends on the branch
    fit_sparse_regression = None

__all__ = ["METHODS", "LABELS", "VFE_ALPHA", "ALPHA_GRID", "MAX_INDUCING", "MESSAGES", "PRESETS", "SparseData",
           "SparseFit", "SiteTrail", "moved_start", "make_preset", "power_of", "method_power", "check_inputs", "initial_inducing", "fit_sparse",
           "evidence_curve", "closed_forms_available"]

#: the likelihoods the page offers: the conjugate Gaussian (noise variance) and probit
LIKELIHOODS = ("gaussian", "probit")
#: The methods of the page, in drawing order.
METHODS = ("exact", "fitc", "vfe", "dtc", "pitc", "power_ep")
#: Legend labels.
LABELS = {"exact": "exact GP", "fitc": "FITC", "vfe": "VFE", "dtc": "DTC", "pitc": "PITC", "power_ep": "Power EP"}
#: The power standing for alpha -> 0 (VFE): Power EP at 1e-6 equals the VFE bound within 1e-5.
VFE_ALPHA = 1e-6
#: Slider alphas of the evidence curve (0 is drawn at VFE_ALPHA).
ALPHA_GRID = np.linspace(0.0, 1.0, 15)
#: Most pseudo-inputs the page accepts (the M slider's end; the draw tool stops adding there).
MAX_INDUCING = 60

#: The tutorial's messages (paper 001: "indirect approximations tend to over-fit", "variational methods
#: known to underfit"), one sentence each; the noise and pseudo-input behaviour as Bauer, van der Wilk
#: and Rasmussen (2016) found it.
MESSAGES = (
    "VFE under-fits: its bound pays tr(K_ff - Q)/(2 sigma^2) for everything the pseudo-inputs do not explain, "
    "so it over-estimates the noise, and maximising it spreads the pseudo-inputs evenly over the data.",
    "FITC over-fits: its heteroscedastic noise diag(K_ff - Q) lets it under-estimate the noise, and maximising its "
    "evidence piles pseudo-inputs up on top of each other.",
    "Power EP's alpha trades one for the other: alpha = 1 is FITC, alpha -> 0 is VFE, and intermediate alphas "
    "(about 0.5) often beat both.",
    "With the pseudo-inputs at the data (Z = X) FITC, VFE and Power EP (any alpha) all equal the exact GP.",
)


def closed_forms_available() -> bool:
    """Whether DTC and PITC can be computed (S1's ``qpviz.inference.sparse_regression`` is present)."""
    return fit_sparse_regression is not None


# -- presets ------------------------------------------------------------------------------------
@dataclass
class SparseData:
    """One preset: data, the model the page suggests, and where the pseudo-inputs start."""

    X: np.ndarray  #: (n, 1)
    y: np.ndarray  #: (n,)
    likelihood: str  #: "gaussian" or "probit"
    noise: float  #: Gaussian noise variance (unused for probit)
    variance: float  #: kernel variance
    lengthscale: float  #: kernel lengthscale
    m: int  #: number of pseudo-inputs
    Z: np.ndarray | None = None  #: (m, 1) start, or None: K-means centres of X
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def classification(self) -> bool:
        return qpviz.likelihood(self.likelihood).support == "binary"


def _smooth(n, rng):
    x = np.sort(rng.uniform(-5.0, 5.0, n))
    y = np.sin(x) + 0.4 * np.sin(2.3 * x) + 0.3 * rng.standard_normal(n)
    return SparseData(x[:, None], y, "gaussian", 0.09, 1.0, 1.0, 10, None,
                      "Smooth 1-D regression, y = sin x + 0.4 sin 2.3x + noise (sd 0.3), M = 10 pseudo-inputs.")


def _gap(n, rng):
    half = n // 2
    x = np.sort(np.concatenate([rng.uniform(-5.0, -1.5, half), rng.uniform(1.5, 5.0, n - half)]))
    y = np.sin(1.2 * x) + 0.2 * rng.standard_normal(n)
    return SparseData(x[:, None], y, "gaussian", 0.04, 1.0, 1.0, 8, None,
                      "The tutorial's gap: data on two intervals with none in (-1.5, 1.5). In the gap the sparse "
                      "methods revert to the prior differently: FITC keeps the variance, DTC loses it.")


def _too_few(n, rng):
    x = np.sort(rng.uniform(-3.0, 3.0, n))
    y = np.sin(3.0 * x) + 0.2 * rng.standard_normal(n)
    return SparseData(x[:, None], y, "gaussian", 0.04, 1.0, 0.5, 3, None,
                      "Pseudo-inputs too few: M = 3 on a wiggly function. VFE smooths it away (large noise), FITC "
                      "explains the wiggles with heteroscedastic noise.")


def _piled(n, rng):
    x = np.sort(rng.uniform(-5.0, 5.0, n))
    y = np.sin(x) + 0.2 * rng.standard_normal(n)
    Z = np.linspace(-0.6, 0.6, 8)[:, None]
    return SparseData(x[:, None], y, "gaussian", 0.04, 1.0, 1.0, 8, Z,
                      "Pseudo-inputs piled up: all 8 in (-0.6, 0.6). Away from them every sparse method reverts "
                      "to its prior; drag them apart and watch the fits (and VFE's bound) recover.")


def _probit_step(n, rng):
    x = np.sort(rng.uniform(-5.0, 5.0, n))
    y = np.where(x > 0.5, 1.0, -1.0)
    flip = rng.uniform(size=n) < 0.05
    y[flip] = -y[flip]
    return SparseData(x[:, None], y, "probit", 0.0, 4.0, 1.5, 6, None,
                      "Probit classification, a step at x = 0.5 with 5% flipped labels. The exact GP is dense EP; "
                      "the sparse methods are Power EP with the probit likelihood.")


def _sine_boundary(n, rng):
    x = np.sort(rng.uniform(-5.0, 5.0, n))
    y = np.where(np.sin(1.3 * x) > 0, 1.0, -1.0)
    return SparseData(x[:, None], y, "probit", 0.0, 4.0, 0.8, 10, None,
                      "Probit classification, labels = sign(sin 1.3x): several boundaries, each needs pseudo-inputs "
                      "near it.")


#: name -> (builder(n, rng), default n)
PRESETS = {
    "smooth regression (N = 200)": (_smooth, 200),
    "gap in the data": (_gap, 100),
    "pseudo-inputs too few (M = 3)": (_too_few, 100),
    "pseudo-inputs piled up": (_piled, 100),
    "probit step": (_probit_step, 100),
    "sine boundary": (_sine_boundary, 150),
}
#: Fewest and most data points of a preset.
MIN_POINTS, MAX_POINTS = 5, 1000


def make_preset(name: str, n: int | None = None, seed: int = 0) -> SparseData:
    """The preset's data (seeded); ``n`` None: its default size. ValueError for an unknown name or bad n."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {list(PRESETS)}")
    build, default_n = PRESETS[name]
    n = default_n if n is None else n
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not MIN_POINTS <= n <= MAX_POINTS:
        raise ValueError(f"the number of points must be a whole number from {MIN_POINTS} to {MAX_POINTS}; got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"the seed must be a whole number >= 0; got {seed!r}")
    return build(int(n), np.random.default_rng(int(seed)))


# -- validation ---------------------------------------------------------------------------------
def power_of(alpha) -> float:
    """Power EP's power for slider value ``alpha`` in [0, 1]: max(alpha, VFE_ALPHA) (0 means VFE)."""
    a = _number(alpha, "alpha")
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"alpha must be between 0 (VFE) and 1 (FITC); got {alpha!r}")
    return max(a, VFE_ALPHA)


def method_power(method: str, alpha) -> float:
    """The power a Power-EP method fits with: 1 for FITC, VFE_ALPHA for VFE, :func:`power_of`
    (``alpha``) for Power EP."""
    return {"fitc": 1.0, "vfe": VFE_ALPHA}.get(method) or power_of(alpha)


def _number(value, label: str) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"the {label} must be a number; got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the {label} must be a number (e.g. 0.5); got {value!r}") from None
    if not np.isfinite(number):
        raise ValueError(f"the {label} must be a finite number; got {value!r}")
    return number


def make_likelihood(name: str, noise):
    """The page's likelihood (one of :data:`LIKELIHOODS`): Gaussian with noise variance ``noise`` > 0
    (the conjugate one), or probit."""
    if name not in LIKELIHOODS:
        raise ValueError(f"the Sparse page fits {' or '.join(map(repr, LIKELIHOODS))} likelihoods; got {name!r}")
    if not registered()[name].is_conjugate:
        return qpviz.likelihood(name)
    s2 = _number(noise, "noise variance")
    if not s2 > 0:
        raise ValueError(f"the noise variance must be > 0 (e.g. 0.1); got {noise!r}")
    return qpviz.likelihood(name, variance=s2)


def initial_inducing(X, m, seed: int = 0) -> np.ndarray:
    """``m`` pseudo-inputs at K-means centres of X (sorted), ValueError if m is not in 1..min(N, MAX_INDUCING)."""
    X = np.asarray(X, float).reshape(-1, 1)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"M (the number of pseudo-inputs) must be a whole number >= 1; got {m!r}")
    if m > X.shape[0]:
        raise ValueError(f"M = {m} pseudo-inputs for only {X.shape[0]} data points: choose M <= {X.shape[0]}")
    if m > MAX_INDUCING:
        raise ValueError(f"M = {m} is more than this page shows; choose M <= {MAX_INDUCING}")
    return np.sort(kmeans_inducing(X, int(m), seed), axis=0)


def check_inputs(X, y, likelihood, Z) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, Z) as float arrays, or a ValueError saying what to change (NaN, M > N, no Z, ...)."""
    X, y = oned.check_data(X, y, likelihood)
    try:
        Z = np.asarray(Z, float).reshape(-1, 1)
    except (TypeError, ValueError):
        raise ValueError("every pseudo-input must be a number") from None
    if Z.shape[0] < 1:
        raise ValueError("give at least one pseudo-input (add a handle, or set M >= 1)")
    if Z.shape[0] > X.shape[0]:
        raise ValueError(f"M = {Z.shape[0]} pseudo-inputs for only {X.shape[0]} data points: use M <= {X.shape[0]}")
    if not np.all(np.isfinite(Z)):
        raise ValueError("every pseudo-input must be a finite number (no NaN or infinity)")
    return X, y, Z


# -- fitting ------------------------------------------------------------------------------------
@dataclass
class SparseFit:
    """One method's fit on the plot grid: f's mean and variance, its log evidence / bound."""

    method: str
    label: str  #: legend label (says when the method is not available)
    available: bool
    mean: np.ndarray | None = None
    var: np.ndarray | None = None
    evidence: float = float("nan")
    converged: bool = True
    seconds: float = 0.0
    note: str = ""
    #: The converged sites (tau, nu) of a Power-EP fit (fitc, vfe, power_ep): a warm ``start`` for the
    #: next fit of the same data, likelihood, kernel, method and projection; None otherwise.
    sites: tuple[np.ndarray, np.ndarray] | None = None
    n_sweeps: int = 0  #: sweeps of the site updates (0: not an iterative fit)


def _unavailable(method: str, short: str, why: str) -> SparseFit:
    return SparseFit(method, f"{LABELS[method]}: {short}", False, note=why)


def _warm_power_ep(X, y, likelihood, kernel, projection: str, Z, power: float, start=None):
    """:func:`fit_power_ep` from the sites ``start`` = (tau, nu) when given, else from the default
    sites. A warm start that fails, or stops before converging, is thrown away for a cold fit: a
    start from far away (another N, a distant Z) must never cost the answer."""
    if start is not None:
        try:
            posterior = fit_power_ep(X, y, likelihood, kernel, projection, Z, alpha=power, warn=False, init=start)
            if posterior.converged and np.isfinite(posterior.log_marginal_likelihood):
                return posterior
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            pass  # the cold fit below says what is wrong, if anything is
    return fit_power_ep(X, y, likelihood, kernel, projection, Z, alpha=power, warn=False)


def _sites_of(posterior) -> tuple[np.ndarray, np.ndarray] | None:
    """The converged sites (tau, nu) as read-only copies (a warm start), None if not converged."""
    if not posterior.converged:
        return None
    tau, nu = (np.array(a, dtype=np.float64) for a in (posterior.site_precision, posterior.site_nu))
    tau.flags.writeable = nu.flags.writeable = False
    return tau, nu


def _inducing_bytes(Z) -> bytes:
    """Pseudo-inputs as a key (bytes pass through)."""
    return Z if isinstance(Z, bytes) else np.asarray(Z, float).tobytes()


class SiteTrail:
    """The sites of the last two good fits of one Power-EP method (same data, likelihood, kernel and
    projection) and the warm start they give the next fit.

    Same Z, powers a_e != a_l, new power a with r = (a - a_l) / (a_l - a_e) in [-1, MAX_RATIO]: the
    secant s = s_l + r (s_l - s_e) of the sites s = (tau, nu) (r < 0: between the two fits; tau
    clipped at 0, as run_sites needs); otherwise the last sites s_l (a drag, a first step, a step
    back past a_e).
    """

    #: Longest extrapolation, in steps of the last two powers (the slider moves one step at a time).
    MAX_RATIO = 2.0

    def __init__(self):
        self._fits = []  # [(power, Z bytes, (tau, nu))], oldest first, at most two

    def add(self, power: float, Z, sites) -> None:
        """Remember a good fit's sites (``None``: not converged, nothing to remember)."""
        if sites is None:
            return
        entry = (float(power), _inducing_bytes(Z), sites)
        if self._fits and self._fits[-1][:2] == entry[:2]:
            self._fits[-1] = entry  # the same fit again (from the cache): keep the trail's other end
        else:
            self._fits = [*self._fits[-1:], entry]

    def sites_at(self, power: float, Z) -> tuple[np.ndarray, np.ndarray] | None:
        """The remembered sites of the fit at ``power`` with pseudo-inputs Z (or their bytes), None if none."""
        key = (float(power), _inducing_bytes(Z))
        return next((sites for *entry, sites in self._fits if tuple(entry) == key), None)

    @property
    def last_inducing(self) -> bytes | None:
        """The pseudo-inputs (as bytes) of the last fit remembered, None if none."""
        return self._fits[-1][1] if self._fits else None

    def start(self, power: float, Z) -> tuple[np.ndarray, np.ndarray] | None:
        """The warm start for a fit at ``power`` with pseudo-inputs Z, None if nothing was fitted."""
        if not self._fits:
            return None
        power_l, z_l, sites_l = self._fits[-1]
        if len(self._fits) == 2:
            power_e, z_e, sites_e = self._fits[0]
            if z_e == z_l == _inducing_bytes(Z) and power_e != power_l:
                ratio = (float(power) - power_l) / (power_l - power_e)
                if -1.0 <= ratio <= self.MAX_RATIO and ratio != 0.0:
                    tau, nu = (last + ratio * (last - earlier) for last, earlier in zip(sites_l, sites_e))
                    return np.maximum(tau, 0.0), nu
        return sites_l


def moved_start(sites, power: float, vfe_move, fitc_move) -> tuple[np.ndarray, np.ndarray]:
    """Power EP's start at new pseudo-inputs: its ``sites`` (tau, nu) at the old ones plus the change
    the same move made to the VFE and FITC sites, mixed by the power a (the sites at power a lie
    near the line between the two ends): s + (1 - a)(s_vfe' - s_vfe) + a (s_fitc' - s_fitc); tau
    clipped at 0. ``vfe_move`` / ``fitc_move``: (sites at the old Z, sites at the new Z)."""
    tau, nu = (s + (1.0 - power) * (v_new - v_old) + power * (f_new - f_old)
               for s, (v_old, v_new), (f_old, f_new) in zip(sites, zip(*vfe_move), zip(*fitc_move)))
    return np.maximum(tau, 0.0), nu


def fit_sparse(X, y, likelihood, kernel, method: str, Z, grid, alpha: float = 1.0, projection: str = "ep",
               start=None) -> SparseFit:
    """``method`` (module table) on data (X, y) with pseudo-inputs Z, predicted at ``grid``.

    ``alpha``: the slider's value in [0, 1] (Power EP only; :func:`power_of`); ``projection``:
    "ep" (moment matching) or "qp" (W2) for Power EP. ``start``: the sites (tau, nu) of an earlier
    fit (:attr:`SparseFit.sites`) of the same data, likelihood, kernel, method and projection (other
    alpha or Z), used by the Power-EP methods (fitc, vfe, power_ep) as a warm start. Raises
    ValueError for bad input; DTC / PITC without the closed forms, and for a non-Gaussian
    likelihood, come back ``available=False``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if projection not in ("ep", "qp"):
        raise ValueError(f"the projection must be 'ep' or 'qp'; got {projection!r}")
    X, y, Z = check_inputs(X, y, likelihood, Z)
    gaussian = likelihood.is_conjugate
    began = time.perf_counter()
    if method == "exact":
        posterior = qpviz.fit(X, y, likelihood, kernel, method="ep", warn=False)
        label = "exact GP" if gaussian else "exact GP (dense EP)"
    elif method in ("dtc", "pitc"):
        if not gaussian:
            return _unavailable(method, "n/a (Gaussian only)", "Gaussian likelihood only (no closed form for classification)")
        if fit_sparse_regression is None:
            return _unavailable(method, "not available yet", "not available yet (needs qpviz.inference.sparse_regression)")
        posterior = fit_sparse_regression(X, y, likelihood, kernel, method, Z)
        label = LABELS[method]
    else:
        power = method_power(method, alpha)
        how = projection if method == "power_ep" else "ep"
        posterior = _warm_power_ep(X, y, likelihood, kernel, how, Z, power, start)
        if method == "power_ep":
            label = f"Power {how.upper()} (alpha = {alpha:.2f})"
        elif gaussian:
            label = LABELS[method]
        else:
            label = "FITC-EP (alpha = 1)" if method == "fitc" else "VFE limit (alpha = 1e-6)"
    mean, var = posterior.predict_f(grid)
    power_ep = method in ("fitc", "vfe", "power_ep")
    return SparseFit(method, label, True, np.asarray(mean), np.maximum(np.asarray(var), 0.0),
                     float(posterior.log_marginal_likelihood), bool(posterior.converged), time.perf_counter() - began,
                     sites=_sites_of(posterior) if power_ep else None, n_sweeps=int(getattr(posterior, "n_sweeps", 0)))


def evidence_curve(X, y, likelihood, kernel, Z, projection: str = "ep", alphas=ALPHA_GRID, cancel=None,
                   trail: SiteTrail | None = None) -> np.ndarray:
    """Power EP's log evidence at each slider alpha (0 drawn at VFE_ALPHA); NaN where a fit failed.
    ``cancel``: a threading.Event checked between alphas (a newer curve was asked for). Each alpha
    starts where the alphas before it point (:class:`SiteTrail`: neighbouring alphas have nearby
    fixed points; fewer sweeps, the same evidence within the sweep tolerance). ``trail``: fits of the
    same data, model, Z and projection to start from (e.g. the page's; extended as the curve goes)."""
    X, y, Z = check_inputs(X, y, likelihood, Z)
    out = np.full(len(alphas), np.nan)
    trail = SiteTrail() if trail is None else trail
    for i, a in enumerate(alphas):
        if cancel is not None and cancel.is_set():
            break
        power = power_of(a)
        try:
            posterior = _warm_power_ep(X, y, likelihood, kernel, projection, Z, power, trail.start(power, Z))
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            continue  # a gap in the curve, not a crash
        out[i] = posterior.log_marginal_likelihood
        trail.add(power, Z, _sites_of(posterior))
    return out
