"""The Sparse page's state and logic, without widgets (tests drive it directly; the page,
app/sparse_page.py, binds widgets to it and app/sparse_figures.py draws it).

:class:`SparseModel` holds the inputs, the data, the pseudo-inputs and the last good fits. All the
computation is :mod:`qpviz.gpdemo.sparse_demo`. Every fit is cached in :data:`FIT_CACHE` by (method,
data, likelihood, kernel, Z, alpha, projection), so flipping back is instant; the Power-EP evidence
curve over alpha (15 fits) runs in the job pool (:data:`qpviz.gpdemo.jobs.EXECUTOR`) after the fits
are drawn, so a drag or an alpha step redraws the fits without waiting for it. A fit not in the
cache starts from the sites of the model's last good fits of that method and projection when only
alpha or Z changed since (:meth:`SparseModel.warm_start`, :class:`sparse_demo.SiteTrail`): fewer
sweeps to the same fixed point.
"""
from __future__ import annotations

import hashlib
import threading

import numpy as np
import param

from qpviz.checks import refusal, shorten
from qpviz.gpdemo import jobs, oned, sparse_demo

__all__ = ["SparseModel", "DEFAULT_PRESET", "FIT_CACHE", "CURVE_CACHE", "CURVE_DELAY_S", "encode_z", "decode_z",
           "safe_shorten"]

DEFAULT_PRESET = "smooth regression (N = 200)"
#: Fits and curves kept (shared by every session: equal keys are equal fits).
FIT_CACHE = jobs.LRUCache(512)
CURVE_CACHE = jobs.LRUCache(64)
#: The curve's job waits this long before it starts (the fits' message leaves the server first).
CURVE_DELAY_S = 0.08


def encode_z(Z) -> str:
    """'z1, z2, ...' with 6 significant digits (the pseudo-input text box and the URL)."""
    return ", ".join(f"{z:.6g}" for z in np.ravel(Z))


def decode_z(text: str) -> np.ndarray:
    """The inverse of :func:`encode_z`; ValueError saying what is wrong."""
    parts = [p.strip() for p in str(text).replace(";", ",").split(",") if p.strip()]
    if not parts:
        raise ValueError("give at least one pseudo-input, e.g. -2, 0, 2")
    try:
        values = np.array([float(p) for p in parts])
    except ValueError:
        raise ValueError("the pseudo-inputs must be numbers separated by commas, e.g. -2, 0, 2") from None
    if not np.all(np.isfinite(values)):
        raise ValueError("every pseudo-input must be a finite number (no NaN or infinity)")
    return np.sort(values)[:, None]


def safe_shorten(text) -> str:
    """A refused text as a message quotes it (shortened)."""
    return repr(shorten(str(text), 40))


def _delayed_curve(X, y, lik, kernel, Z, projection, trail, cancel: threading.Event) -> np.ndarray:
    """:func:`sparse_demo.evidence_curve` after CURVE_DELAY_S (at once NaN if cancelled meanwhile)."""
    if cancel.wait(CURVE_DELAY_S):
        return np.full(sparse_demo.ALPHA_GRID.size, np.nan)
    return sparse_demo.evidence_curve(X, y, lik, kernel, Z, projection, cancel=cancel, trail=trail)


class SparseModel(param.Parameterized):
    """Inputs, data, pseudo-inputs and the last good fits of the Sparse page."""

    preset = param.Selector(default=DEFAULT_PRESET, objects=list(sparse_demo.PRESETS))
    n_points = param.Integer(default=100)
    seed = param.Integer(default=0)
    kernel = param.Selector(default="RBF", objects=list(oned.KERNELS))
    variance = param.Number(default=1.0)
    lengthscale = param.Number(default=1.0)
    noise = param.Parameter(default=0.04, doc="Gaussian noise variance (> 0); text is refused with a message.")
    m = param.Integer(default=8, doc="Number of pseudo-inputs; a change restarts Z at K-means centres.")
    alpha = param.Number(default=0.5, doc="Power EP's alpha on the slider, 0 (VFE) to 1 (FITC).")
    projection = param.Selector(default="ep", objects=["ep", "qp"])
    methods = param.ListSelector(default=list(sparse_demo.METHODS), objects=list(sparse_demo.METHODS))
    z_text = param.String(default="", doc="The pseudo-inputs as 'z1, z2, ...' (edited, dragged or from a link).")

    message = param.String(default="")
    note = param.String(default="")
    fits = param.Dict(default={})
    curve = param.Parameter(default=None, doc="Power-EP evidence at sparse_demo.ALPHA_GRID, None while computing.")
    version = param.Integer(default=0)
    curve_version = param.Integer(default=0)

    def __init__(self, background: bool = True, **params):
        super().__init__(**params)
        self.background = background  # the curve in the job pool (the page) or inline (tests)
        self.X = np.zeros((0, 1))
        self.y = np.zeros(0)
        self.Z = np.zeros((0, 1))
        self.grid = None
        self.classification = False
        self.likelihood_name = "gaussian"
        self._loading = False
        self._curve_job = None  # {key, future, cancel event, args (to submit it again)}
        # (method, projection) -> (data / likelihood / kernel keys, SiteTrail of its last good fits)
        self._warm_sites = {}
        self.load_preset(reset_n=True)

    # -- inputs ------------------------------------------------------------------------------
    @param.depends("preset", watch=True)
    def _preset_changed(self) -> None:
        self.load_preset(reset_n=True)

    @param.depends("n_points", "seed", watch=True)
    def _data_changed(self) -> None:
        if not self._loading:
            self.load_preset(reset_n=False)

    def load_preset(self, reset_n: bool) -> bool:
        """The preset's data and suggested model; Z at the preset's start (or K-means)."""
        try:
            data = sparse_demo.make_preset(self.preset, None if reset_n else self.n_points, self.seed)
            Z = data.Z if data.Z is not None else sparse_demo.initial_inducing(data.X, min(data.m, data.X.shape[0]))
        except ValueError as exc:
            self.message = f"Not refitted, the plots show the last good fit: {exc}"
            return False
        self.X, self.y, self.Z = data.X, data.y, Z
        self.likelihood_name, self.classification = data.likelihood, data.classification
        self._loading = True
        try:
            self.param.update(n_points=data.X.shape[0], variance=data.variance, lengthscale=data.lengthscale,
                              noise=data.noise if not data.classification else self.noise, m=Z.shape[0],
                              z_text=encode_z(Z), note=data.description)
        finally:
            self._loading = False
        return self.refit()

    @param.depends("m", watch=True)
    def _m_changed(self) -> None:
        if self._loading:
            return
        try:
            Z = sparse_demo.initial_inducing(self.X, self.m)
        except ValueError as exc:
            self.message = f"Not refitted, the plots show the last good fit: {exc}"
            return
        self.set_inducing(Z)

    @param.depends("z_text", watch=True)
    def _z_text_changed(self) -> None:
        if self._loading:
            return
        typed = self.z_text
        try:
            Z = decode_z(typed)
        except ValueError as exc:
            self.message = f"Pseudo-inputs not used, the plots show the last good fit: {exc}"
        else:
            if self.set_inducing(Z):
                return
        self._loading = True  # the box shows the pseudo-inputs in use again, not the refused text
        try:
            self.z_text = encode_z(self.Z)
        finally:
            self._loading = False
        self.message = refusal(f"{self.message} (typed {safe_shorten(typed)})", self.z_text)

    def type_z(self, text: str) -> None:
        """Typed pseudo-inputs: taken (:meth:`_z_text_changed`); the ones in use typed again clear a refusal."""
        if text == self.z_text:
            self.message = ""
        self.z_text = text

    def set_inducing(self, Z) -> bool:
        """New pseudo-inputs (a drag, an added or removed handle, typed text, the M slider)."""
        Z = np.sort(np.asarray(Z, float).reshape(-1, 1), axis=0)
        try:
            sparse_demo.check_inputs(self.X, self.y, self.likelihood(), Z)
        except ValueError as exc:
            self.message = f"Not refitted, the plots show the last good fit: {exc}"
            return False
        self.Z = Z
        self._loading = True
        try:
            self.param.update(m=Z.shape[0], z_text=encode_z(Z))
        finally:
            self._loading = False
        return self.refit()

    @param.depends("kernel", "variance", "lengthscale", "noise", "alpha", "projection", "methods", watch=True)
    def _model_changed(self) -> None:
        if not self._loading:
            self.refit()

    def likelihood(self):
        return sparse_demo.make_likelihood(self.likelihood_name, self.noise)

    def y_shown(self) -> np.ndarray:
        """y as drawn on the latent plot (labels -1 / +1 as they are)."""
        return self.y

    def _keys(self, lik, kernel) -> tuple:
        digest = hashlib.sha1(self.X.tobytes() + b"|" + self.y.tobytes()).hexdigest()
        return (digest, (lik.name, tuple(sorted(lik.params.items()))),
                (type(kernel).__name__, tuple(sorted(kernel.params.items()))))

    # -- fitting -----------------------------------------------------------------------------
    def _warm_key(self, method: str) -> tuple:
        return method, self.projection if method == "power_ep" else "ep"

    def _trail(self, method: str, keys) -> sparse_demo.SiteTrail | None:
        kept = self._warm_sites.get(self._warm_key(method))
        return kept[1] if kept is not None and kept[0] == keys else None

    def warm_start(self, method: str, keys, Z, fits=None) -> tuple | None:
        """The start (tau, nu) the last good fits of ``method`` (and projection) give a fit with
        pseudo-inputs Z at the current alpha (:class:`sparse_demo.SiteTrail`) when their data,
        likelihood and kernel (``keys``, :meth:`_keys`; N is in the data's digest) are the current
        ones, i.e. only alpha or Z changed since; else None (a cold start). Power EP after a move
        of Z: moved as the move moved the VFE and FITC sites (:func:`sparse_demo.moved_start`;
        ``fits``: this refit's fits so far, VFE and FITC at the new Z)."""
        trail = self._trail(method, keys)
        if trail is None:
            return None
        power = sparse_demo.method_power(method, self.alpha)
        start = trail.start(power, Z)
        old_z = trail.last_inducing
        if method != "power_ep" or old_z == Z.tobytes() or fits is None:
            return start
        moves = []
        for end in ("vfe", "fitc"):
            end_trail, fit = self._trail(end, keys), fits.get(end)
            before = end_trail.sites_at(sparse_demo.method_power(end, 0.0), old_z) if end_trail else None
            moves.append((before, fit.sites) if fit is not None else (None, None))
        if any(s is None for move in moves for s in move):
            return start  # an end not fitted (unticked, not converged): the old sites as they are
        return sparse_demo.moved_start(start, power, *moves)

    def _remember_sites(self, fits: dict, keys, Z) -> None:
        """The good ``fits``' sites start later fits (only of this data / likelihood / kernel)."""
        self._warm_sites = {k: v for k, v in self._warm_sites.items() if v[0] == keys}
        for method, fit in fits.items():
            if fit.sites is not None:
                trail = self._warm_sites.setdefault(self._warm_key(method), (keys, sparse_demo.SiteTrail()))[1]
                trail.add(sparse_demo.method_power(method, self.alpha), Z, fit.sites)

    def refit(self) -> bool:
        """Fit the chosen methods; on bad input keep the last fits and say what to change."""
        stopped = None  # the last good fits' curve job, stopped before these fits
        try:
            lik = self.likelihood()
            kernel = oned.make_kernel(self.kernel, self.variance, self.lengthscale)
            sparse_demo.power_of(self.alpha)
            X, y, Z = sparse_demo.check_inputs(self.X, self.y, lik, self.Z)
            grid = oned.make_grid(X)
            keys = self._keys(lik, kernel)
            stopped = self._cancel_other_curve(self._curve_key(keys, Z))
            fits = {}
            for method in sparse_demo.METHODS:
                if method not in self.methods:
                    continue
                key = (method, *keys, None if method == "exact" else Z.tobytes(),
                       (self.alpha, self.projection) if method == "power_ep" else None)
                fit = FIT_CACHE.get_recent(key)
                if fit is None:
                    fit = sparse_demo.fit_sparse(X, y, lik, kernel, method, Z, grid, self.alpha, self.projection,
                                                 start=self.warm_start(method, keys, Z, fits))
                    FIT_CACHE.put(key, fit)
                fits[method] = fit
        except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError) as exc:
            self.message = f"Not refitted, the plots show the last good fit: {exc}"
            if stopped is not None:  # the plots still show the last good fits: their curve too
                # a fresh trail: the stopped job's thread may still extend its own at its current alpha
                self._submit_curve(stopped["key"], (*stopped["args"][:-1], self._curve_start(stopped["args"][4])))
            return False  # the warm starts stay those of the last good fits
        self._remember_sites(fits, keys, Z)
        self.grid = grid
        self.param.update(fits=fits, message="", version=self.version + 1)
        self._start_curve(X, y, lik, kernel, Z, keys)
        return True

    def _start_curve(self, X, y, lik, kernel, Z, keys) -> None:
        """The Power-EP evidence over alpha: cached, or computed (inline, or in the pool when
        ``background``, after CURVE_DELAY_S, so that its thread does not compete with the message
        carrying the new fits; :func:`_delayed_curve`)."""
        key = self._curve_key(keys, Z)
        cached = CURVE_CACHE.get_recent(key)
        self._cancel_other_curve(key)
        if cached is not None:
            self.param.update(curve=cached, curve_version=self.curve_version + 1)
            return
        if not self.background:
            curve = sparse_demo.evidence_curve(X, y, lik, kernel, Z, self.projection, trail=self._curve_start(Z))
            CURVE_CACHE.put(key, curve)
            self.param.update(curve=curve, curve_version=self.curve_version + 1)
            return
        if self._curve_job is None:
            self._submit_curve(key, (X, y, lik, kernel, Z, self.projection, self._curve_start(Z)))
        self.param.update(curve=None, curve_version=self.curve_version + 1)

    def _curve_start(self, Z) -> sparse_demo.SiteTrail:
        """The curve's first alphas start between the VFE fit (its alpha -> 0 end; the EP projection,
        a start as good as QP's there) and the Power-EP fit just drawn: the same Z, no cold fit."""
        trail = sparse_demo.SiteTrail()
        for method in ("vfe", "power_ep"):
            fit = self.fits.get(method)
            if fit is not None and fit.sites is not None:
                trail.add(sparse_demo.method_power(method, self.alpha), Z, fit.sites)
        return trail

    def _submit_curve(self, key, args) -> None:
        """:func:`_delayed_curve` on ``args`` = (X, y, lik, kernel, Z, projection, trail) in the pool."""
        cancel = threading.Event()
        self._curve_job = {"key": key, "future": jobs.EXECUTOR.submit(_delayed_curve, *args, cancel), "cancel": cancel,
                           "args": args}

    def _curve_key(self, keys, Z) -> tuple:
        return (*keys, Z.tobytes(), self.projection)

    def _cancel_other_curve(self, key) -> dict | None:
        """A newer curve is asked for: stop the running one at its next alpha (returned, else None).
        Called before the fits too, so that the old curve's thread does not slow them down (a drag
        after a drag)."""
        job = self._curve_job
        if job is None or job["key"] == key:
            return None
        job["cancel"].set()
        self._curve_job = None
        return job

    @property
    def curve_pending(self) -> bool:
        return self._curve_job is not None

    def poll_curve(self) -> None:
        """Take the finished curve from the pool (the page polls while one is pending)."""
        job = self._curve_job
        if job is None or not job["future"].done():
            return
        self._curve_job = None
        try:
            curve = job["future"].result()
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            self.message = f"the evidence curve failed: {exc}"
            return
        CURVE_CACHE.put(job["key"], curve)
        self.param.update(curve=curve, curve_version=self.curve_version + 1)

    def cancel_curve(self) -> None:
        if self._curve_job is not None:
            self._curve_job["cancel"].set()
            self._curve_job = None
