"""The GP 1-D page's state and logic, without widgets (tests drive it directly; the page,
app/gp_1d.py, binds widgets to it and app/gp_1d_figures.py draws it).

:class:`GP1DModel` holds the page's inputs as parameters, the data (a preset's, or edited by clicks,
CSV uploads and links: :mod:`qpviz.gpdemo.oned_data`) and the last good fits. Every change goes
through :meth:`GP1DModel.refit`, which validates and computes: bad input leaves the fits as they
were and sets ``message`` to what to change; a typed number is checked by its rule in :data:`TYPED`
(:mod:`qpviz.number_rules`). EP, QP, VB and Laplace run inline (about 20-40 ms for EP and QP at
N = 200; at once on two threads from N = 150, :mod:`qpviz.gpdemo.method_threads`); MCMC and the evidence
optimisation run in the thread pool of :mod:`qpviz.gpdemo.jobs` (numba releases the GIL), report
progress through :meth:`GP1DModel.poll` and can be cancelled; sessions asking for the same job share
one run (:data:`qpviz.gpdemo.jobs.RUNNING`). Every fit is cached by (data, likelihood, kernel,
method) in :data:`FIT_CACHE`, so flipping back to earlier settings is instant.
"""
from __future__ import annotations

import hashlib
import io
import math

import numpy as np
import param

from qpviz import explorer
from qpviz.gpdemo import jobs, oned, presets, sd_ratio
from qpviz.gpdemo.method_threads import fit_each
from qpviz.gpdemo.oned_data import MAX_UPLOAD_BYTES, decode_data, encode_data, parse_csv, too_large_message
from qpviz.gpdemo.warm_start import carried_sites
from qpviz.number_rules import NumberField

__all__ = ["GP1DModel", "FIT_CACHE", "TYPED", "DEFAULT_PRESET", "INLINE_METHODS", "MCMC_SETTINGS", "CACHE_SIZE"]

#: The page opens on a preset where EP and QP visibly differ.
DEFAULT_PRESET = "step likelihood, eps = 0 (EP vs QP differ)"
#: Methods computed inline on every change; MCMC runs in the pool.
INLINE_METHODS = ("ep", "qp", "vb", "laplace")
#: Fits kept in :data:`FIT_CACHE` (shared by every session: equal keys are equal fits).
CACHE_SIZE = 256
#: MCMC reference settings: chains x samples (each chain after its burn-in).
MCMC_SETTINGS = dict(oned.MCMC_DEFAULTS)

#: The page's typed numbers (model parameter -> rules).
TYPED = {"n_points": NumberField("number of points", presets.MIN_POINTS, presets.MAX_POINTS, integer=True),
         "seed": NumberField("seed", 0, 10**9, integer=True),
         "variance": NumberField("kernel variance", 0, 10_000, low_open=True),
         "lengthscale": NumberField("lengthscale", 0, 10_000, low_open=True)}

#: (method, data, likelihood, kernel) -> oned.MethodFit; ("optimise", ...) -> (variance, lengthscale, steps).
FIT_CACHE = jobs.LRUCache(CACHE_SIZE)


class GP1DModel(param.Parameterized):
    """Inputs, data and fits of the GP 1-D page (module docstring)."""

    preset = param.Selector(default=DEFAULT_PRESET, objects=list(presets.PRESETS), doc="Data preset.")
    n_points = param.Integer(default=60, doc="Number of points of the preset (5-1000).")
    seed = param.Integer(default=0, doc="Seed of the preset's random draw.")
    likelihood = param.Selector(default="step", objects=explorer.likelihood_names(), doc="Likelihood p(y|f).")
    likelihood_params = param.Dict(default={}, doc="The likelihood's parameters.")
    kernel = param.Selector(default="RBF", objects=list(oned.KERNELS), doc="Covariance function.")
    variance = param.Number(default=9.0, doc="Kernel variance (> 0).")
    lengthscale = param.Number(default=1.0, doc="Kernel lengthscale (> 0).")
    methods = param.ListSelector(default=["ep", "qp", "mcmc"], objects=list(oned.METHODS), doc="Methods shown.")
    step_method = param.Selector(default="ep", objects=["ep", "qp"], doc="Method of the step-through.")

    data_query = param.String(default="", doc=(
        "The data as 'x:y;x:y;...' when they differ from the preset's (clicks, uploads), so that a shared link "
        "reopens them; '' for the preset's data."))

    message = param.String(default="", doc="What to change (the last input was refused); '' if fine.")
    note = param.String(default="", doc="Information about the data (e.g. clipped n).")
    job_status = param.String(default="", doc="The running long job and its progress.")
    job_running = param.Boolean(default=False)
    fits = param.Dict(default={}, doc="method -> oned.MethodFit of the last good inputs.")
    optimisation = param.List(default=[], doc="oned.OptimisationStep of the current/last optimisation.")
    optimisation_done = param.Boolean(default=False, doc="The last optimisation finished (not cancelled).")
    site = param.Parameter(default=None, doc="oned.SiteView of the step-through's next site (None: not stepping).")
    change = param.Parameter(default=None, doc=(
        "oned.SiteChange of the step-through's last single-site update (None: none yet, or the last step was a "
        "sweep or a reset)."))
    version = param.Integer(default=0, doc="Bumped whenever data or fits change.")

    def __init__(self, **params):
        super().__init__(**params)
        self.X = np.zeros((0, 1))
        self.y = np.zeros(0)
        self.stepper = None
        self._job = None
        self._loading = False
        self._writing_query = False
        self._fitted_points = None  # (X, y) the fits belong to: their sites start the next fit
        self.load_preset()

    # -- inputs ------------------------------------------------------------------------------
    def set_typed(self, name: str, value) -> bool:
        """A typed (or linked) value of number ``name`` (:data:`TYPED`): taken if valid, else refused
        with a message naming the field, its range and the value kept."""
        field = TYPED[name]
        try:
            number = field.parse(value)
        except ValueError as exc:
            self.message = f"{exc}; kept {field.show(getattr(self, name))}"
            return False
        self.message = ""
        self.param.update({name: number})
        return True

    @param.depends("preset", "n_points", "seed", watch=True)
    def load_preset(self) -> bool:
        """Draw the preset's data and take its model (likelihood, kernel, hyper-parameters)."""
        try:
            data = presets.make(self.preset, self.n_points, self.seed)
        except ValueError as exc:
            self.message = f"{exc}"
            return False
        self._loading = True
        try:
            self.param.update(likelihood=data.likelihood, likelihood_params=dict(data.likelihood_params),
                              kernel=data.kernel, variance=data.variance, lengthscale=data.lengthscale)
        finally:
            self._loading = False
        return self.set_data(data.X, data.y, edited=False, note=data.note)

    def set_data(self, X, y, edited: bool = True, note: str = "") -> bool:
        """New data (kept even if the model refuses them, so the user can fix the model);
        ``edited`` data (not a preset's) are written to ``data_query`` for the URL. ``note`` about
        the new data replaces the old data's (e.g. "3 points from the uploaded CSV")."""
        self.note = note
        self.X = np.asarray(X, float).reshape(-1, 1)
        self.y = np.asarray(y, float).ravel()
        self._writing_query = True
        try:
            self.data_query = encode_data(self.X, self.y) if edited else ""
        finally:
            self._writing_query = False
        self.stepper = None
        self.site = None
        self.change = None
        return self.refit()

    @param.depends("data_query", watch=True)
    def _data_query_changed(self) -> None:
        """A shared link's data (the page's own writes are skipped)."""
        if self._writing_query or not self.data_query:
            return
        try:
            X, y = decode_data(self.data_query)
        except ValueError as exc:
            self.message = f"the data in the link were not used: {exc}"
            return
        self.set_data(X, y)

    @param.depends("likelihood", "likelihood_params", "kernel", "variance", "lengthscale", "methods", watch=True)
    def _inputs_changed(self) -> None:
        if not self._loading:
            self.stepper = None
            self.site = None
            self.change = None
            self.refit()

    @param.depends("step_method", watch=True)
    def _step_method_changed(self) -> None:
        self.stepper = None  # the other method starts from the initial sites
        self.site = None
        self.change = None

    def likelihood_object(self):
        return explorer.build_likelihood(self.likelihood, **self.likelihood_params)

    def kernel_object(self):
        return oned.make_kernel(self.kernel, self.variance, self.lengthscale)

    def _keys(self, lik, kernel) -> tuple:
        digest = hashlib.sha1(self.X.tobytes() + b"|" + self.y.tobytes()).hexdigest()
        return digest, (lik.name, tuple(sorted(lik.params.items()))), (type(kernel).__name__,
                                                                         tuple(sorted(kernel.params.items())))

    # -- fitting -----------------------------------------------------------------------------
    def refit(self) -> bool:
        """Fit the chosen methods to the data; on bad input keep the last fits and say what to change."""
        try:
            lik = self.likelihood_object()
            kernel = self.kernel_object()
            X, y = oned.check_data(self.X, self.y, lik)
            grid = oned.make_grid(X)
            keys = self._keys(lik, kernel)
            inline = [method for method in self.methods if method in INLINE_METHODS]
            fits = {method: FIT_CACHE.get_recent((method, *keys)) for method in inline}
            starts = {method: self._warm_start(method, X, y, lik) for method in inline if fits[method] is None}
            # the methods not in the cache fitted at once (EP and QP side by side on two cores)
            fitted = fit_each(lambda method: oned.fit_method(X, y, lik, kernel, method, grid, **starts[method]), starts,
                              len(y))
            for method, method_fit in fitted.items():
                FIT_CACHE.put((method, *keys), method_fit)
            fits.update(fitted)
            reference = FIT_CACHE.get_recent(("mcmc", *keys))
        except (ValueError, TypeError, ArithmeticError, np.linalg.LinAlgError) as exc:
            self.message = f"Not refitted, the plots show the last good fit: {exc}"
            return False
        if reference is not None:
            oned.add_reference_distances(fits, reference)
            if "mcmc" in self.methods:
                fits["mcmc"] = reference
        elif "mcmc" in self.methods:
            self._start_mcmc(X, y, lik, kernel, grid, keys)
        if "mcmc" not in self.methods and self._job is not None and self._job["key"][0] == "mcmc":
            self.cancel_job(quiet=True)  # nobody waits for the reference any more
        self._fitted_points = X, y
        self.param.update(fits=fits, message="", version=self.version + 1)
        return True

    def _warm_start(self, method: str, X, y, lik) -> dict:
        """EP / QP start from the sites of the same method's last fit: a hyper-parameter step
        moves the fixed point a little (fewer sweeps, same fixed point within the tolerance); after
        a click or an upload, the points that stayed keep their sites
        (:func:`qpviz.gpdemo.warm_start.carried_sites`)."""
        last = self.fits.get(method)
        if method not in ("ep", "qp") or last is None or last.site_tau is None or self._fitted_points is None:
            return {}
        carried = carried_sites(*self._fitted_points, last.site_tau, last.site_nu, X, y, lik.initial_sites(y))
        return {} if carried is None else {"init": carried}

    # -- long jobs ---------------------------------------------------------------------------
    def _submit(self, kind: str, key, start) -> None:
        """Start a long job (one per page: a new one cancels the old), or join the same job of
        another session (:func:`qpviz.gpdemo.jobs.start_or_join`)."""
        self.cancel_job(quiet=True)
        self._job = jobs.start_or_join(kind, key, start, progress=(0, MCMC_SETTINGS["chains"]))
        self.param.update(job_running=True, job_status=f"{kind}: started")

    def _start_mcmc(self, X, y, lik, kernel, grid, keys) -> None:
        if self._job is not None and self._job["key"] == ("mcmc", *keys):
            return  # already running for these settings

        def start(job):
            def progress(done, total):
                job["progress"] = (done, total)

            return jobs.EXECUTOR.submit(oned.mcmc_reference, X, y, lik, kernel, grid, on_progress=progress,
                                   cancel=job["cancel"], **MCMC_SETTINGS)

        self._submit("MCMC reference", ("mcmc", *keys), start)

    def optimise(self) -> bool:
        """Start maximising the EP evidence over the kernel's hyper-parameters (in the pool)."""
        try:
            lik = self.likelihood_object()
            kernel = self.kernel_object()
            X, y = oned.check_data(self.X, self.y, lik)
        except (ValueError, TypeError, ArithmeticError) as exc:
            self.message = f"Cannot optimise: {exc}"
            return False
        key = ("optimise", *self._keys(lik, kernel))
        cached = FIT_CACHE.get_recent(key)
        if cached is not None:
            self.param.update(optimisation=list(cached[2]), optimisation_done=True)
            self.param.update(variance=cached[0], lengthscale=cached[1])
            return True
        self.param.update(optimisation=[], optimisation_done=False)
        self._submit("optimisation", key, lambda job: jobs.EXECUTOR.submit(
            oned.optimise_evidence, X, y, lik, kernel, on_step=job["steps"].append, cancel=job["cancel"]))
        return True

    def cancel_job(self, quiet: bool = False) -> None:
        """Stop the running job (MCMC stops after its current chain, optimisation at its next EP run)."""
        job, self._job = self._job, None
        if job is None:
            return
        jobs.release(job)
        self.param.update(job_running=False, job_status="" if quiet else f"{job['kind']} cancelled")

    def poll(self) -> None:
        """Called periodically by the page (and by tests): show progress, take a finished job's result."""
        job = self._job
        if job is None:
            return
        if job["kind"] == "optimisation" and len(job["steps"]) != len(self.optimisation):
            self.optimisation = list(job["steps"])
        state, result = jobs.outcome(job, cancelled=oned.Cancelled)
        if state == "running":
            if job["kind"] == "optimisation":
                last = f", log Z_EP = {self.optimisation[-1].evidence:.4f}" if self.optimisation else ""
                self.job_status = (f"optimisation: {len(self.optimisation)} iterate(s){last} "
                                   f"({jobs.elapsed(job):.0f} s)")
            else:
                self.job_status = jobs.chain_status(job)
            return
        self._job = None
        self.job_running = False
        if state == "cancelled":
            self.job_status = f"{job['kind']} cancelled"
            return
        if state == "failed":
            self.job_status = ""
            self.message = f"{job['kind']} failed: {result}"
            return
        seconds = jobs.elapsed(job)
        if job["kind"] == "optimisation":
            kernel, steps = result
            FIT_CACHE.put(job["key"], (kernel.params["variance"], kernel.params["lengthscale"], steps))
            self.param.update(optimisation=list(steps), optimisation_done=True)
            self.job_status = f"optimisation done in {seconds:.1f} s: log Z_EP = {steps[-1].evidence:.4f}"
            self.param.update(variance=kernel.params["variance"], lengthscale=kernel.params["lengthscale"])
        else:
            FIT_CACHE.put(job["key"], result)
            self.job_status = f"MCMC reference done in {seconds:.1f} s: {result.convergence()}" + (
                f". Note: {result.meaning}" if result.meaning else "")
            self.refit()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the running job has finished and was taken (tests)."""
        jobs.wait_until(lambda: self._job is None, self.poll, timeout)

    # -- editing the data --------------------------------------------------------------------
    def click(self, x: float, y_value: float, remove_within: float = 0.02) -> bool:
        """A click on the predictive plot at (x, y_value): remove the nearest point if the click
        hits it (within ``remove_within`` of the x range, and 3 x that of the plotted y range:
        the point's marker, not the empty space above or below it), else add a point there
        (binary: the label +1 above probability 1/2, else -1; counts: the rounded count >= 0;
        real: y_value)."""
        if not (math.isfinite(x) and math.isfinite(y_value)):
            return False
        width = max(float(np.ptp(self.X)) if self.X.size else 1.0, 1e-9)
        if self.X.size:
            binary = self.likelihood_object().support == "binary"
            shown = (self.y + 1) / 2 if binary else self.y  # where the predictive plot draws the points
            height = 1.0 if binary else max(float(np.ptp(shown)), 1.0)
            # normalised distance to every point: the nearest hit one goes
            dx, dy = (self.X[:, 0] - x) / (remove_within * width), (shown - y_value) / (3 * remove_within * height)
            distance = np.hypot(dx, dy)
            nearest = int(np.argmin(distance))
            if distance[nearest] <= 1.0:
                keep = np.arange(self.y.size) != nearest
                return self.set_data(self.X[keep], self.y[keep])
        if self.y.size >= presets.MAX_POINTS:
            self.message = f"at most {presets.MAX_POINTS} points; remove points before adding more"
            return False
        support = self.likelihood_object().support
        if support == "binary":
            value = 1.0 if y_value >= 0.5 else -1.0
        elif support == "count":
            value = float(max(round(y_value), 0))
        else:
            value = float(y_value)
        order = np.argsort(np.append(self.X[:, 0], x), kind="stable")
        return self.set_data(np.append(self.X[:, 0], x)[order], np.append(self.y, value)[order])

    def upload(self, content: bytes) -> bool:
        """Replace the data by a CSV file's (see :func:`parse_csv`); a bad file changes nothing."""
        try:
            X, y = parse_csv(content)
        except ValueError as exc:
            self.message = f"CSV not loaded: {exc}"
            return False
        return self.set_data(X, y, note=f"{y.size} points from the uploaded CSV")

    def refuse_upload(self, n_bytes: int) -> None:
        """A file the browser did not send (larger than MAX_UPLOAD_BYTES, or unreadable): say so."""
        reason = too_large_message(n_bytes) if n_bytes > MAX_UPLOAD_BYTES else "the browser could not read the file"
        self.message = f"CSV not loaded: {reason}"

    # -- step-through ------------------------------------------------------------------------
    def _ensure_stepper(self) -> bool:
        if self.stepper is not None and self.stepper.method == self.step_method:
            return True
        try:
            self.stepper = oned.SiteStepper(self.X, self.y, self.likelihood_object(), self.kernel_object(),
                                            self.step_method)
        except (ValueError, TypeError, ArithmeticError) as exc:
            self.message = f"Cannot step: {exc}"
            return False
        return True

    def step(self, what: str = "site") -> bool:
        """One site update (``"site"``), the rest of the sweep (``"sweep"``) or back to the start (``"reset"``)."""
        if what not in ("site", "sweep", "reset"):
            raise ValueError(f"step what must be 'site', 'sweep' or 'reset'; got {what!r}")
        if not self._ensure_stepper():
            return False
        change = None
        if what == "site":
            change = self.stepper.step_site_change()
        elif what == "sweep":
            self.stepper.step_sweep()
        else:
            self.stepper.reset()
        self.change = change  # before ``site``: the page redraws the step-through when ``site`` changes
        self.site = self.stepper.site_view()
        return True

    def explorer_link(self) -> tuple[str, str]:
        """(URL query, note) opening the step-through's next site in the Projection Explorer."""
        if self.site is None or not (self.site.cavity_var > 0):
            return "", ""
        return oned.explorer_query(self.likelihood_object(), self.site.y, self.site.cavity_mean, self.site.cavity_var)

    # -- lessons -----------------------------------------------------------------------------
    def sd_comparison(self) -> sd_ratio.SdComparison | None:
        """Each shown Gaussian method's latent sd over the MCMC reference's along the grid
        (:func:`qpviz.gpdemo.sd_ratio.compare`); None unless the reference and another method are shown."""
        reference = self.fits.get("mcmc")
        if reference is None:
            return None
        variances = {m: f.var for m, f in self.fits.items() if m != "mcmc" and f.var.shape == reference.var.shape}
        if not variances:
            return None
        return sd_ratio.compare(variances, reference.var, reference.grid[:, None], self.X, reference.ess,
                                reference.converged, reference.convergence())

    # -- export ------------------------------------------------------------------------------
    def export_csv(self) -> str:
        """The fitted numbers: per grid point x, each shown method's latent mean, variance and predictive."""
        columns = {"x": next(iter(self.fits.values())).grid} if self.fits else {"x": np.zeros(0)}
        for method, fit in self.fits.items():
            columns[f"{method}_mean"] = fit.mean
            columns[f"{method}_var"] = fit.var
            columns[f"{method}_predictive"] = fit.predictive
        out = io.StringIO()
        out.write(",".join(columns) + "\n")
        np.savetxt(out, np.column_stack(list(columns.values())), delimiter=",", fmt="%.17g")  # round-trips every float64
        return out.getvalue()
