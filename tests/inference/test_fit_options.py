"""The options of ``qpviz.fit``, declared once per engine (issue 23): the registry, the engines'
defaults, the check of a call's option names and the options table of docs/inference.md agree."""
from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import qpviz
from qpviz.inference import ep, laplace, mcmc, methods, sep, site_fit, sparse_regression, svi, vb
from qpviz.inference.fit import OPTIONS
from qpviz.inference.options import COMMON, MethodOptions

TABLE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "inference.md"

#: each options class and the engine function whose keyword defaults it declares
ENGINES = [
    (ep.SiteOptions, ep.run_sites),
    (vb.VBOptions, vb.run_vb),
    (laplace.LaplaceOptions, laplace.run_laplace),
    (mcmc.MCMCOptions, mcmc.run_mcmc),
    (svi.SVIOptions, svi.fit_svi),
    (sep.SEPOptions, sep.fit_sep),
    (sparse_regression.PITCOptions, sparse_regression.fit_sparse_regression),
]
#: defaults of qpviz.fit that differ from the engine function's on purpose (docs/sparse.md: called directly,
#: fit_sparse_regression fits the noise by default; through qpviz.fit it does not)
DIFFERENT_ON_PURPOSE = {(sparse_regression.PITCOptions, "optimise_likelihood")}


def _docs_table() -> dict[tuple[str, str], str]:
    """(method, option) -> default (as written) from the options table of qpviz.fit in docs/inference.md."""
    text = TABLE_PAGE.read_text()
    start = text.index("| option | default | methods | meaning |")
    out = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("| `"):
            break
        option, default, where, _ = (cell.strip() for cell in line.strip("|").split(" | "))
        names = list(methods.METHODS) if where == "all" else where.split(", ")
        for method in names:
            key = (method, option.strip("`"))
            assert key not in out, f"the options table lists {key} twice"
            out[key] = default.strip("`")
    return out


def test_options_table_lists_exactly_the_declared_options_and_defaults():
    declared = {(name, opt): repr(default) for name, m in methods.REGISTRY.items()
                for opt, default in m.options.defaults().items()}
    assert _docs_table() == declared


def test_options_table_is_the_generated_one():
    assert methods.options_table() in TABLE_PAGE.read_text()


@pytest.mark.parametrize("options, engine", ENGINES, ids=lambda x: getattr(x, "__name__", ""))
def test_declared_defaults_are_the_engines_defaults(options, engine):
    params = inspect.signature(engine).parameters
    shared = [n for n in options.names() if n in params and params[n].default is not inspect.Parameter.empty]
    assert len(shared) >= 3, f"{engine.__name__} shares too few options with {options.__name__}: {shared}"
    declared = options.defaults()
    wrong = {n: (declared[n], params[n].default) for n in shared
             if declared[n] != params[n].default and (options, n) not in DIFFERENT_ON_PURPOSE}
    assert not wrong, f"{options.__name__} declares defaults other than {engine.__name__}'s: {wrong}"


def test_every_method_is_registered_with_its_options():
    assert methods.METHODS == qpviz.inference.METHODS
    assert set(methods.METHODS) == {"ep", "qp", "vb", "laplace", "mcmc", "fitc", "pitc", "dtc", "vfe", "svi", "sep"}
    for name, m in methods.REGISTRY.items():
        assert issubclass(m.options, MethodOptions) and dataclasses.is_dataclass(m.options)
        assert OPTIONS[name] == m.options.own()
        assert set(m.options.names()) == set(m.options.own()) | set(COMMON)
        assert all(doc.strip() for doc in m.options.docs().values()), name
    assert "minibatch" in OPTIONS["svi"] and "alpha" in OPTIONS["ep"] and "blocks" in OPTIONS["pitc"]
    assert "blocks" not in OPTIONS["fitc"]


def test_options_are_frozen_dataclasses_with_the_declared_defaults():
    opts = ep.SiteOptions()
    assert opts.tol == 1e-6 and opts.max_sweeps == 200 and opts.alpha is None and opts.max_opt_iter == 100
    assert svi.SVIOptions().max_opt_iter == 1000  # its batch mode is the whole training
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.tol = 1e-3


def test_an_unknown_option_is_refused_with_the_accepted_ones():
    with pytest.raises(TypeError) as err:
        vb.VBOptions.check("vb", {"tol": 1e-6, "max_sweeps": 3, "nonsense": 1})
    allowed = sorted(vb.VBOptions.own() + COMMON)
    assert str(err.value) == f"method 'vb' does not take option(s) ['max_sweeps', 'nonsense']; it accepts {allowed}"
    for name, m in methods.REGISTRY.items():
        m.options.check(name, m.options.defaults())  # every declared option passes the check
    X = np.linspace(-1, 1, 5)[:, None]
    with pytest.raises(TypeError, match=r"method 'laplace' does not take option\(s\) \['seed'\]"):
        qpviz.fit(X, np.ones(5), "probit", qpviz.kernels.RBF(), method="laplace", seed=1)


def test_fit_passes_the_declared_max_opt_iter_to_the_optimiser(monkeypatch):
    seen = {}

    def capture(prior, likelihood, y, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("captured")

    monkeypatch.setattr(site_fit, "optimise_hyperparameters", capture)
    X = np.linspace(-1, 1, 6)[:, None]
    with pytest.raises(RuntimeError, match="captured"):
        qpviz.fit(X, np.sign(X[:, 0] + 0.1), "probit", qpviz.kernels.RBF(), optimise=True)
    assert seen["max_iter"] == ep.SiteOptions().max_opt_iter == 100


def test_options_table_parser_reads_rows():
    # the parser must see rows, else the equality test above would compare two empty tables
    rows = _docs_table()
    assert rows[("ep", "tol")] == "1e-06" and rows[("svi", "max_opt_iter")] == "1000"
    assert re.search(r"\| `jitter` \| `None` \| all \|", TABLE_PAGE.read_text())


@dataclasses.dataclass(frozen=True)
class _TemperedLaplaceOptions(MethodOptions):
    """A user's method with one option of its own."""

    power: float = dataclasses.field(default=1.0, metadata={"doc": "tempering of the likelihood"})


@pytest.fixture
def registered():
    """A user method, 'laplace_t': Laplace on p(y | f)^power (one file's worth of code), removed after."""
    calls = []

    def run(X, y, lik, kernel, method, optimise, options):
        calls.append(dict(options))
        return qpviz.fit(X, y, lik.tempered(options.pop("power", 1.0)), kernel, method="laplace", **options)

    qpviz.register_method("laplace_t", _TemperedLaplaceOptions, run)
    yield calls
    methods.unregister_method("laplace_t")


def test_a_registered_method_runs_through_fit_with_its_options_checked(registered):
    X = np.linspace(-2, 2, 15)[:, None]
    y = np.where(np.sin(2 * X[:, 0]) > 0, 1.0, -1.0)
    kernel = qpviz.kernels.RBF(1.0, 0.8)
    mine = qpviz.fit(X, y, "probit", kernel, method="laplace_t", power=1.0, jitter=1e-8)
    plain = qpviz.fit(X, y, "probit", kernel, method="laplace", jitter=1e-8)
    np.testing.assert_allclose(mine.predict_f(X)[0], plain.predict_f(X)[0], rtol=1e-12)
    weaker = qpviz.fit(X, y, "probit", kernel, method="laplace_t", power=0.3)
    assert np.all(np.abs(weaker.predict_f(X)[0]) < np.abs(plain.predict_f(X)[0]))  # less data, less pull
    assert registered == [{"power": 1.0, "jitter": 1e-8}, {"power": 0.3}]
    assert OPTIONS["laplace_t"] == ("power",)
    with pytest.raises(TypeError, match=r"method 'laplace_t' does not take option\(s\) \['tol'\]"):
        qpviz.fit(X, y, "probit", kernel, method="laplace_t", tol=1e-3)
    # the documented table lists the built-in methods only
    assert "laplace_t" not in methods.options_table()


def test_registering_refuses_what_would_break_fit():
    with pytest.raises(ValueError, match="'ep' is a built-in method"):
        qpviz.register_method("ep", MethodOptions, lambda *a: None)
    with pytest.raises(ValueError, match="a method's name must be a word"):
        qpviz.register_method("my method", MethodOptions, lambda *a: None)
    with pytest.raises(TypeError, match="deriving from qpviz.inference.options.MethodOptions"):
        qpviz.register_method("mine", dict, lambda *a: None)
    with pytest.raises(TypeError, match="run must be callable"):
        qpviz.register_method("mine", MethodOptions, None)
    with pytest.raises(ValueError, match="built-in method and cannot be removed"):
        methods.unregister_method("qp")
    with pytest.raises(ValueError, match=r"method must be one of \('ep', 'qp'"):
        qpviz.fit(np.zeros((2, 1)), np.ones(2), "probit", qpviz.kernels.RBF(), method="mine")
