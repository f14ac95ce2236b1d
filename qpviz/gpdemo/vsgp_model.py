"""The VSGP page's state and logic, without widgets (tests drive it directly; the page,
app/vsgp_page.py, binds widgets to it and app/vsgp_figures.py draws it).

:class:`VSGPModel` holds the page's inputs as parameters (preset, n, seed, M, blur, covariance
shape, EP / QP, the RBF kernel's variance and length-scale, dragged centres), the data they give,
the last good fits of VSGP and FITC and what the figures draw from them. Every change goes through
:meth:`VSGPModel.refit`, which validates and computes: a bad input keeps the last good fits and
sets ``message`` to what to change (the field and its accepted range). The computation is
:mod:`qpviz.gpdemo.vsgp_demo`. Fits are cached (:class:`qpviz.gpdemo.jobs.LRUCache`) by (data,
kernel, centres, C, method, grid, test set): a blur step refits VSGP only, FITC comes from the cache.

The model refits at once after a change only once it is ``drawn`` (the page's figures exist);
each new fit shown bumps ``version``: what the page watches to redraw.
"""
from __future__ import annotations

import numpy as np
import param

from qpviz.checks import quoted
from qpviz.gpdemo import jobs, twod, vsgp_demo
from qpviz.kernels import RBF

__all__ = ["VSGPModel", "KINDS", "METHOD_LABELS", "RANGES", "GRID_SIZE", "CENTRE_DECIMALS", "CACHE_ITEMS",
           "out_of_range", "encode_centres", "decode_centres"]

#: The two maps: VSGP (blurred basis points) and FITC (the same centres, C_j = 0).
KINDS = {"vsgp": "VSGP", "fitc": "FITC"}
METHOD_LABELS = {"ep": "EP", "qp": "QP"}
#: Valid range of each numeric input (the sliders span it; the URL may ask for anything).
RANGES = {"n": (20, 500), "seed": (0, 10_000), "m": (1, 40), "blur": (0.0, 3.0), "variance": (0.1, 20.0),
          "lengthscale": (0.1, 5.0)}
#: Grid points along each axis (50 x 50: a drag refits and redraws within 250 ms at N = 500, M = 20).
GRID_SIZE = 50
#: Centres are kept (and put in the URL) to this many decimals.
CENTRE_DECIMALS = 3
#: Fits kept per page (a drag back, a slider step back or the FITC map beside a new blur: no fit).
CACHE_ITEMS = 64


def out_of_range(values: dict) -> list[str]:
    """For each input of ``values`` (name -> value) outside RANGES, or not a finite number, one
    sentence saying what to change ([] if every one is good)."""
    problems = []
    for name, value in values.items():
        lo, hi = RANGES[name]
        try:
            good = lo <= float(value) <= hi  # False for NaN
        except (TypeError, ValueError):
            good = False
        if not good:
            problems.append(f"{name} must be a number in [{lo:g}, {hi:g}]; got {quoted(value)}")
    return problems


def encode_centres(Z) -> list:
    """Centres (M, 2) as the ``centres`` parameter and the URL hold them: [[x1, x2], ...], rounded
    to CENTRE_DECIMALS."""
    return np.asarray(Z, float).reshape(-1, 2).round(CENTRE_DECIMALS).tolist()


def decode_centres(value) -> np.ndarray:
    """The inverse of :func:`encode_centres`: (M, 2) finite centres, at most RANGES["m"][1] of them
    ((0, 2) for []: K-means centres); ValueError naming the field and what it accepts."""
    hi = RANGES["m"][1]
    words = (f"centres must be a list of at most {hi} [x1, x2] pairs of finite numbers ([]: K-means centres); "
             f"got {quoted(value)}")
    if not isinstance(value, (list, tuple)):
        raise ValueError(words)
    try:
        Z = np.asarray(value, dtype=float).reshape(-1, 2)
    except (TypeError, ValueError):
        raise ValueError(words) from None
    if any(not isinstance(pair, (list, tuple)) or len(pair) != 2 for pair in value) or len(Z) > hi \
            or not np.isfinite(Z).all():
        raise ValueError(words)
    return Z


class VSGPModel(param.Parameterized):
    """The inputs, data and last good fits of the VSGP page."""

    preset = param.Selector(objects=list(vsgp_demo.PRESETS), default="circle", doc="Data preset.")
    n = param.Integer(default=200, doc="Number of training points.")
    seed = param.Integer(default=0, doc="Random seed of the training set.")
    m = param.Integer(default=6, doc="Number of basis points M (K-means centres).")
    blur = param.Number(default=1.0, doc="C_j = blur x the cluster covariance (0 = FITC).")
    shape = param.Selector(objects=list(vsgp_demo.SHAPES), default="full", doc="Local covariance shape.")
    method = param.Selector(objects=list(METHOD_LABELS), default="ep", doc="Site projection: EP or QP.")
    variance = param.Number(default=4.0, doc="RBF kernel variance σ_f².")
    lengthscale = param.Number(default=0.8, doc="RBF kernel length-scale ℓ.")
    centres = param.List(default=[], doc="Dragged centres [[x1, x2], ...] ([]: K-means centres).")
    message = param.String(default="", doc="What to change when an input is bad ('' if none).")
    version = param.Integer(default=0, doc="Bumped when a change has been refitted (the page redraws).")

    def __init__(self, **params):
        super().__init__(**params)
        self.cache = jobs.LRUCache(CACHE_ITEMS)
        self.fitted = 0  # fits computed (not taken from the cache)
        self.fits: dict | None = None  # the last good fits, kind -> vsgp_demo.SparseGridFit
        self.shown = None  # (X, y, Z, C) of the last good fits
        self.description = ""  # what the last good fits were fitted to (plot titles)
        self.link_note = ""  # what a bad link asked for and what replaced it
        self.drawn = False  # the page's figures exist: a change refits at once
        self._kmeans = jobs.LRUCache(1)  # (X, M) -> K-means centres, the last one
        self._presets = jobs.LRUCache(1)  # (preset, n, seed) -> (X, y), the last one
        self.param.watch(self._on_data_inputs, ["preset", "n", "seed", "m", "centres"])
        self.param.watch(lambda *events: self.changed(), ["blur", "shape", "method", "variance", "lengthscale"])

    # -- computation -----------------------------------------------------------------------
    def _data(self, preset: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The preset's (X, y), the same read-only arrays while preset, n and seed stay: the page
        then knows by identity that the points (and a cached fit's map) have not changed, and
        sends them no more (app/gp_2d_figures.GridFigure.show)."""
        key = (preset, n, seed)
        data = self._presets.get_recent(key)
        if data is None:
            X, y = twod.check_data(*vsgp_demo.make_preset(preset, n, seed))
            X, y = np.array(X), np.array(y)  # own copies, frozen
            X.flags.writeable = y.flags.writeable = False
            data = (X, y)
            self._presets.put(key, data)
        return data

    def centres_array(self, X) -> np.ndarray:
        """The dragged centres, or M K-means centres of X."""
        if self.centres:
            return decode_centres(self.centres)
        m = int(self.m)
        if m > len(X):
            raise ValueError(f"M = {m} basis points need at least as many training points: lower M or raise n")
        key = (X.tobytes(), m)
        centres = self._kmeans.get_recent(key)
        if centres is None:  # K-means costs ~10 ms at N = 500: once per data and M
            centres = vsgp_demo.kmeans_centres(X, m)
            self._kmeans.put(key, centres)
        return centres

    def _fit(self, X, y, kernel, Z, C, grid, X_test, y_test) -> vsgp_demo.SparseGridFit:
        """:func:`vsgp_demo.fit_sparse_grid`, from the cache when these inputs were fitted before."""
        key = vsgp_demo.fit_key(X, y, kernel, Z, C, self.method, grid, X_test)
        fit = self.cache.get_recent(key)
        if fit is None:
            fit = vsgp_demo.fit_sparse_grid(X, y, kernel, Z, C, self.method, grid, X_test, y_test)
            self.fitted += 1
            self.cache.put(key, fit)
        return fit

    def compute(self) -> dict:
        """Both fits of the current inputs (cached), and what they were fitted to; ValueError naming
        every bad numeric input (a link may bring several)."""
        problems = out_of_range({name: getattr(self, name) for name in RANGES})
        if problems:
            raise ValueError("; ".join(problems))
        kernel = RBF(variance=float(self.variance), lengthscale=float(self.lengthscale))  # VSGP's blur: RBF only
        X, y = self._data(self.preset, int(self.n), int(self.seed))
        Z = self.centres_array(X)
        C = vsgp_demo.local_covariances(X, Z, float(self.blur), self.shape)
        X_test, y_test = vsgp_demo.held_out_set(self.preset)
        grid = twod.make_grid(X, GRID_SIZE, twod.grid_extent(np.vstack([X, Z])))
        fits = {kind: self._fit(X, y, kernel, Z, C if kind == "vsgp" else None, grid, X_test, y_test) for kind in KINDS}
        return {"fits": fits, "X": X, "y": y, "Z": Z, "C": C}

    def refit(self) -> bool:
        """Fit VSGP and FITC to the current inputs; on bad input keep the last good fits, set
        ``message`` (what to change) and return False."""
        try:
            result = self.compute()
        except Exception as exc:  # shown on the page; never raised into the browser
            self.message = f"{exc}. The plots keep the last good fit."
            return False
        self.fits = result["fits"]
        self.shown = (result["X"], result["y"], result["Z"], result["C"])
        self.description = (f"{self.preset} N={len(result['y'])}, M={len(result['Z'])}, {METHOD_LABELS[self.method]}, "
                            f"blur={self.blur:g} {self.shape}")  # the kernel is in the widgets: the title fits 1024 px
        notes = [note for fit in self.fits.values() for note in fit.notes]
        self.message = "; ".join(filter(None, [self.link_note, *notes]))
        return True

    def changed(self) -> None:
        """Inputs changed: once the page is drawn, refit now and bump ``version`` (the page redraws)."""
        if self.drawn:
            self.link_note = ""  # the reader has moved on from the link
            self.refit()
            self.version += 1

    def first_fit(self) -> None:
        """The page's figures now exist: bad link values go back to their defaults, then the first fit."""
        self.link_note = self.replace_bad_inputs()
        self.drawn = True
        self.refit()
        self.version += 1

    # -- what the figures draw -----------------------------------------------------------------
    def title(self, kind: str) -> str:
        """The title of map ``kind`` (KINDS) of the last good fits."""
        return f"{KINDS[kind]}: p(y=+1|x),\n{self.description}"

    def ellipses(self) -> dict:
        """The last good fits' basis blurs as Bokeh ellipse columns (:func:`vsgp_demo.ellipses`)."""
        _, _, Z, C = self.shown
        return {key: np.asarray(value) for key, value in vsgp_demo.ellipses(Z, C).items()}

    # -- the centres ---------------------------------------------------------------------------
    def move_centres(self, xs, ys) -> None:
        """New centre positions (a drag): kept in ``centres`` (and the URL), rounded; M follows
        their number (the point-draw tool can delete one). The page's own redraw of the centres
        (no centre moved) changes nothing; an unusable move is said in ``message``."""
        try:
            Z = np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]).round(CENTRE_DECIMALS)
        except (TypeError, ValueError) as exc:  # never into the browser console
            self.message = f"that move could not be used: {exc}"
            return
        shown = None if self.shown is None else self.shown[2]
        if shown is not None and Z.shape == shown.shape and np.allclose(Z, shown, rtol=0, atol=10.0**-CENTRE_DECIMALS):
            return  # nothing moved (or the page's own redraw, echoed)
        if len(Z) == 0:
            self.message = "every centre was deleted: press 'K-means centres' (or move the M slider) to get them back"
            return
        self.param.update(centres=encode_centres(Z), m=min(max(len(Z), RANGES["m"][0]), RANGES["m"][1]))

    def reset_centres(self, event=None) -> None:
        """Back to M K-means centres."""
        self.centres = []

    def _on_data_inputs(self, *events) -> None:
        """A new preset, n, seed or M goes back to K-means centres, unless the same change brings
        its own centres (a drag, or a link)."""
        if "centres" not in {event.name for event in events} and self.centres:
            self.centres = []  # calls this again, with the centres: one refit
            return
        self.changed()

    # -- a link's values -------------------------------------------------------------------------
    def replace_bad_inputs(self) -> str:
        """Before the first fit: numeric inputs out of range (a bad link) go back to their
        defaults, so the page opens consistent; returns what was replaced ('' if nothing)."""
        bad = [name for name in RANGES if out_of_range({name: getattr(self, name)})]
        replaced = [f"{name} = {quoted(getattr(self, name))} (valid: {RANGES[name][0]:g} to {RANGES[name][1]:g}) was "
                    f"replaced by {self.param[name].default!r}" for name in bad]
        self.param.update({name: self.param[name].default for name in bad})
        return "The link asked for " + "; ".join(replaced) + "." if replaced else ""

    @staticmethod
    def centres_check(value) -> list:
        """A link's centres (the URL's check): :func:`decode_centres`, as the parameter holds them."""
        return encode_centres(decode_centres(value))
