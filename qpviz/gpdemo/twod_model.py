"""The GP 2-D page's state and logic, without widgets (tests drive it directly; the page,
app/gp_2d.py, binds widgets to it and app/gp_2d_figures.py draws it).

:class:`GP2DModel` holds the page's inputs as parameters (preset, n, seed, kernel and its
hyper-parameters, methods, clicked and removed points), the data they give and the last good fit.
Every change goes through :meth:`GP2DModel.refit`, which validates and computes: bad input keeps
the last good fit and sets ``message`` to what to change (one class only, a 0 or NaN
hyper-parameter). Every method is fitted and predicted on the grid once per (data, kernel) and
cached, so showing a method again, or going back to earlier hyper-parameters, costs no fit. The
MCMC reference is a long job (:mod:`qpviz.gpdemo.jobs`): it runs in the shared thread pool, reports
its progress through :meth:`GP2DModel.poll`, can be cancelled, is shared by sessions asking for
the same reference and cached (:data:`MCMC_CACHE`).

The model refits at once after a change only once it is ``drawn`` (the page's figures exist);
before that a change only marks the fit stale (:meth:`GP2DModel.ensure_fit` computes it). Each new
fit shown bumps ``version``: what the page watches to redraw.
"""
from __future__ import annotations

import hashlib

import numpy as np
import param

from qpviz import kernels
from qpviz.checks import quoted
from qpviz.gpdemo import jobs, oned, twod
from qpviz.gpdemo.warm_start import carried_sites
from qpviz.likelihoods import likelihood as make_likelihood

__all__ = ["GP2DModel", "METHOD_LABELS", "INLINE_METHODS", "MCMC_SETTINGS", "MCMC_CACHE", "KERNELS", "RANGES",
           "GRID_SIZE", "validated"]

#: The methods, with their names on the page.
METHOD_LABELS = {"ep": "EP", "qp": "QP", "vb": "VB", "laplace": "Laplace", "mcmc": "MCMC"}
#: Methods fitted inline at every change; MCMC is a long job.
INLINE_METHODS = ("ep", "qp", "vb", "laplace")
#: The MCMC reference: chains x kept samples, each after its burn-in, thinned (21 000 elliptical
#: slice steps a chain). Measured on 2 busy cores: 3-8 s at N = 100 (half of it the grid's
#: predictive), 17 s at N = 400; its Monte Carlo error (mean |p_A - p_B| / 2 of two halves) is
#: about 0.005 in p, as small as EP's distance to it on the presets.
MCMC_SETTINGS = {"chains": 4, "n_samples": 1000, "burn_in": 1000, "thin": 20}
#: MCMC references of every session, by (data, kernel, grid, settings).
MCMC_CACHE = jobs.LRUCache(32)
KERNELS = {"rbf": kernels.RBF, "matern32": kernels.Matern32, "matern52": kernels.Matern52}
#: Valid range of each numeric input (the sliders span it; the URL may ask for anything).
RANGES = {"n": (2, 400), "seed": (0, 10_000), "variance": (0.1, 20.0), "lengthscale": (0.1, 5.0)}
GRID_SIZE = 60
#: Fitted (data, kernel, method) grids kept per page.
CACHE_ITEMS = 48
#: A click closer than this fraction of the plot width to a point removes that point.
REMOVE_RADIUS = 0.03


def validated(name: str, value) -> float:
    """``value`` as a finite number inside RANGES[name], else a ValueError saying what to change."""
    lo, hi = RANGES[name]
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}]; got {quoted(value)}") from None
    if not np.isfinite(number) or not lo <= number <= hi:
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}]; got {quoted(value)}")
    return number


class GP2DModel(param.Parameterized):
    """The inputs, data and last good fit of the GP 2-D page."""

    preset = param.Selector(objects=list(twod.PRESETS), default="moons", doc="Data preset.")
    n = param.Integer(default=100, doc="Number of preset points.")
    seed = param.Integer(default=0, doc="Random seed of the preset.")
    kernel = param.Selector(objects=list(KERNELS), default="rbf", doc="Kernel family.")
    variance = param.Number(default=4.0, doc="Kernel variance σ_f².")
    lengthscale = param.Number(default=0.8, doc="Kernel length-scale ℓ.")
    methods = param.ListSelector(default=["ep", "qp"], objects=list(METHOD_LABELS), doc="Methods to show.")
    added = param.List(default=[], doc="Clicked points [x1, x2, label] (in the URL: a link reopens them).")
    removed = param.List(default=[], doc="Indices of the preset's points a click removed.")
    click_class = param.Selector(objects=["+1", "-1"], default="+1", doc="Class of a clicked point.")
    message = param.String(default="", doc="What to change when an input is bad ('' if none).")
    job_status = param.String(default="", doc="The MCMC reference's progress, or how it ended.")
    job_running = param.Boolean(default=False, doc="An MCMC reference is being computed for this page.")
    version = param.Integer(default=0, doc="Bumped when a change has been refitted (the page redraws).")

    def __init__(self, **params):
        super().__init__(**params)
        self.X, self.y, self.origin = self.data()
        self.param.watch(self._on_data_inputs, ["preset", "n", "seed", "added", "removed"])
        self.param.watch(lambda *events: self.changed(), ["kernel", "variance", "lengthscale", "methods"])
        self.fit: twod.GridFit | None = None  # the last good fit
        self.fit_description = ""  # preset, N and hyper-parameters of self.fit
        self.link_note = ""  # what a bad link asked for and what replaced it
        self.drawn = False  # the page's figures exist: a change refits at once
        self._cache = jobs.LRUCache(CACHE_ITEMS)  # this page's grids (MCMC_CACHE: every session's references)
        self._stale = True  # inputs changed since self.fit was computed
        self._job = None  # the MCMC reference job this page waits for (qpviz.gpdemo.jobs)

    # -- computation -----------------------------------------------------------------------
    def kernel_object(self) -> kernels.Kernel:
        """The kernel the inputs describe (ValueError naming the bad input)."""
        return KERNELS[self.kernel](variance=validated("variance", self.variance),
                                    lengthscale=validated("lengthscale", self.lengthscale))

    def _method_grids(self, kernel, methods, extent) -> list[twod.GridFit]:
        """Each method's grid fit, from the cache or, for those not in it, from one
        :func:`twod.fit_grid` call (the methods then share one K(X, grid))."""
        keys = {m: (self.X.tobytes(), self.y.tobytes(), repr(kernel), m, extent) for m in methods}
        found = {m: self._cache.get_recent(key) for m, key in keys.items()}
        missing = [m for m, result in found.items() if result is None]
        if missing:
            fitted = twod.fit_grid(self.X, self.y, kernel, methods=missing, grid_size=GRID_SIZE, extent=extent,
                                   inits=self._warm_starts(missing))
            for m in missing:
                found[m] = twod.GridFit(x1=fitted.x1, x2=fitted.x2, X=fitted.X, y=fitted.y, likelihood=fitted.likelihood,
                                        kernel=fitted.kernel, notes=[n for n in fitted.notes if n.startswith(f"{m.upper()}: ")],
                                        **{name: {m: getattr(fitted, name)[m]} for name in twod.PER_METHOD_FIELDS})
                self._cache.put(keys[m], found[m])
        return [found[m] for m in methods]

    def _warm_starts(self, methods) -> dict:
        """Starting sites of each site method (EP, QP) from the last fit shown: a hyper-parameter
        step or a click moves the fixed point a little, so the sweeps start near it (fewer
        sweeps to the same tolerance); the points that stayed keep their sites
        (:func:`qpviz.gpdemo.warm_start.carried_sites`), a new one starts flat."""
        last = self.fit
        if last is None:
            return {}
        initial = make_likelihood(last.likelihood).initial_sites(self.y)
        inits = {m: carried_sites(last.X, last.y, *last.sites[m], self.X, self.y, initial)
                 for m in methods if last.sites.get(m) is not None}
        return {m: sites for m, sites in inits.items() if sites is not None}

    def refit(self) -> bool:
        """Fit every shown method (and EP and QP for the difference map) to the current data.

        On bad input keep the last good fit, set ``message`` and return False.
        """
        try:
            kernel = self.kernel_object()
            twod.check_data(self.X, self.y)
            if not self.methods:
                raise ValueError("choose at least one method to show")
            extent = twod.grid_extent(self.X)
            wanted = [m for m in INLINE_METHODS if m in self.methods or m in ("ep", "qp")]
            parts = self._method_grids(kernel, wanted, extent)
        except Exception as exc:  # shown on the page; never raised into the browser
            self.message = f"{exc}. The plots keep the last good fit."
            return False
        reference = self._mcmc_reference(kernel, extent)
        combined = twod.GridFit(x1=parts[0].x1, x2=parts[0].x2, X=self.X, y=self.y, likelihood="probit", kernel=kernel)
        for part in [*parts, *([reference] if reference is not None else [])]:
            for field in twod.PER_METHOD_FIELDS:
                getattr(combined, field).update(getattr(part, field))
            combined.notes += part.notes
        combined.mcmc_noise = dict(reference.mcmc_noise) if reference is not None else {}
        combined.mcmc_diagnostics = dict(reference.mcmc_diagnostics) if reference is not None else {}
        combined.var_difference = combined.var["qp"] - combined.var["ep"]
        self.fit = combined
        self.fit_description = self.subtitle()  # the titles describe the fit shown, not a rejected input
        self.message = "; ".join(filter(None, [self.link_note, *combined.notes]))
        return True

    def ensure_fit(self) -> twod.GridFit | None:
        """The current fit, computed now if the inputs changed since the last one."""
        if self._stale:
            self._stale = False
            self.refit()
        return self.fit

    def changed(self) -> None:
        """Inputs changed: once the page is drawn, refit now and bump ``version`` (the page redraws)."""
        self._stale = True
        if self.drawn:
            self.link_note = ""  # the reader has moved on from the link
            self.ensure_fit()
            self.version += 1

    def subtitle(self) -> str:
        """Preset, N and hyper-parameters of the inputs (the plots' second title line)."""
        return f"{self.preset} N={len(self.y)}, {self.kernel} σ_f²={self.variance:g} ℓ={self.lengthscale:g}"

    def csv_text(self) -> str:
        """The grid numbers of the last good fit (qpviz.gpdemo.twod.grid_csv)."""
        fit = self.ensure_fit()
        return twod.grid_csv(fit) if fit is not None else "no fit yet\n"

    # -- the MCMC reference (a long job) ------------------------------------------------------
    def _mcmc_key(self, kernel, extent) -> tuple:
        digest = hashlib.sha1(self.X.tobytes() + b"|" + self.y.tobytes()).hexdigest()
        return "mcmc-2d", digest, repr(kernel), extent, GRID_SIZE, tuple(sorted(MCMC_SETTINGS.items()))

    def _mcmc_reference(self, kernel, extent) -> twod.GridFit | None:
        """The cached reference of the current data and kernel; without one, its job is started
        (or kept running) when MCMC is shown, and stopped when it is not."""
        if "mcmc" not in self.methods:
            self.cancel_job(quiet=True)  # nobody waits for the reference any more
            return None
        key = self._mcmc_key(kernel, extent)
        reference = MCMC_CACHE.get_recent(key)
        if reference is None and (self._job is None or self._job["key"] != key):
            self._start_mcmc(key, kernel, extent)
        return reference

    def _start_mcmc(self, key, kernel, extent) -> None:
        self.cancel_job(quiet=True)  # one job per page: the reference of older settings is not wanted
        X, y = self.X.copy(), self.y.copy()

        def start(job):
            def progress(done, total):
                job["progress"] = (done, total)

            return jobs.EXECUTOR.submit(twod.mcmc_grid, X, y, kernel, GRID_SIZE, extent=extent,
                                        on_progress=progress, cancel=job["cancel"], **MCMC_SETTINGS)

        self._job = jobs.start_or_join("MCMC reference", key, start, progress=(0, MCMC_SETTINGS["chains"]))
        self.param.update(job_running=True, job_status="MCMC reference: started")

    def cancel_job(self, quiet: bool = False) -> None:
        """Stop waiting for the MCMC reference (its job stops after the current chain unless
        another session waits for it too)."""
        job, self._job = self._job, None
        if job is None:
            return
        jobs.release(job)
        self.param.update(job_running=False, job_status="" if quiet else "MCMC reference cancelled")

    def poll(self) -> None:
        """Called periodically while the job runs (and by tests): take its progress; a finished
        reference goes into MCMC_CACHE and the model refits (instant: every fit is cached)."""
        job = self._job
        if job is None:
            return
        state, result = jobs.outcome(job, cancelled=oned.Cancelled)
        if state == "running":
            self.job_status = jobs.chain_status(job)
            return
        self._job = None
        self.job_running = False
        if state == "cancelled":
            self.job_status = "MCMC reference cancelled"
        elif state == "failed":
            self.job_status = ""
            self.message = f"the MCMC reference failed: {result}"
        else:
            MCMC_CACHE.put(job["key"], result)
            self.job_status = (f"MCMC reference done in {jobs.elapsed(job):.1f} s "
                               f"({result.mcmc_noise['samples']} samples): {result.mcmc_diagnostics.get('status', '')}")
            self.changed()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the MCMC job has finished and was taken (tests)."""
        jobs.wait_until(lambda: self._job is None, self.poll, timeout)

    # -- the data and a link's values ---------------------------------------------------------
    def data(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """X, y and each row's origin (its index in the preset, or -(k + 1) for clicked point k):
        the preset without the ``removed`` points, then the ``added`` ones. ValueError if an
        input is bad."""
        n = int(validated("n", self.n))
        seed = int(validated("seed", self.seed))
        X, y = twod.make_preset(self.preset, n, seed)
        try:
            removed = {int(i) for i in self.removed if int(i) == i and 0 <= i < n}
            added = np.asarray(self.added, dtype=float).reshape(-1, 3)
        except (TypeError, ValueError):
            raise ValueError("the clicked points must be [x1, x2, label] triples and the removed points preset "
                             "indices") from None
        if not (np.isfinite(added).all() and np.isin(added[:, 2], twod.CLASSES).all()):
            raise ValueError("a clicked point needs finite coordinates and the label -1 or +1")
        keep = np.array([i not in removed for i in range(n)], dtype=bool)
        origin = np.concatenate([np.flatnonzero(keep), -1 - np.arange(len(added))])
        return np.vstack([X[keep], added[:, :2]]), np.concatenate([y[keep], added[:, 2]]), origin

    def _on_data_inputs(self, *events) -> None:
        """A new preset, n or seed starts afresh (no clicked or removed points), unless the same
        change brings its own (a link)."""
        names = {event.name for event in events}
        if not names & {"added", "removed"} and (self.added or self.removed):
            self.param.update(added=[], removed=[])  # calls this again, with the edits
            return
        try:
            self.X, self.y, self.origin = self.data()
        except Exception as exc:
            self.message = f"{exc}. The plots keep the last good data and fit."
            return
        self.changed()

    def replace_bad_inputs(self, query: dict, url_keys: dict) -> str:
        """Before the first fit: numeric inputs out of range (a bad link) go back to their
        defaults, so that the page opens consistent (a NaN never reaches a slider); ``query`` is
        the link's {key: value}, ``url_keys`` {parameter: key}. Returns the message saying what was
        replaced ('' if nothing)."""
        replaced = []
        for name in RANGES:
            try:
                validated(name, getattr(self, name))
            except ValueError:
                default = self.param[name].default
                replaced.append(f"{name} = {quoted(getattr(self, name))} (valid: {RANGES[name][0]:g} to {RANGES[name][1]:g}) "
                                f"was replaced by {default!r}")
                setattr(self, name, default)
        for name in RANGES:  # a value the URL sync itself refused (e.g. n = -3.0 is no integer)
            asked, shown = query.get(url_keys.get(name)), getattr(self, name)
            if asked is not None and not any(text.startswith(f"{name} = ") for text in replaced):
                try:
                    kept = float(asked) == float(shown)
                except (TypeError, ValueError):
                    kept = False
                if not kept:
                    lo, hi = RANGES[name]
                    replaced.append(f"{name} = {quoted(asked)} (valid: {lo:g} to {hi:g}) was replaced by {shown!r}")
                    self.param.trigger(name)  # the URL sync writes the value shown into the link
        if not self.methods:
            replaced.append("no method was chosen: EP and QP are shown")
            self.methods = list(self.param.methods.default)
        return "The link asked for " + "; ".join(replaced) + "." if replaced else ""

    # -- clicks on a probability map ------------------------------------------------------------
    def toggle_point(self, x1: float, x2: float) -> None:
        """A click at (x1, x2): remove the point under it, or add one of class ``click_class``
        (kept in ``added`` / ``removed``, so that the URL holds them)."""
        if x1 is None or x2 is None or not np.isfinite([x1, x2]).all():
            return
        lo, hi, _, _ = twod.grid_extent(self.X)
        distance = np.hypot(self.X[:, 0] - x1, self.X[:, 1] - x2)
        if len(distance) and distance.min() < REMOVE_RADIUS * (hi - lo):
            origin = int(self.origin[distance.argmin()])
            if origin >= 0:
                self.removed = [*self.removed, origin]
            else:
                self.added = [point for k, point in enumerate(self.added) if k != -1 - origin]
        else:
            self.added = [*self.added, [round(float(x1), 3), round(float(x2), 3), float(self.click_class)]]

    def tap(self, x=None, y=None) -> None:
        """A click's coordinates from the page: :meth:`toggle_point`, any error said in ``message``."""
        try:
            self.toggle_point(x, y)
        except Exception as exc:  # never into the browser console
            self.message = f"that click could not be used: {exc}"
