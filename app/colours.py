"""One colour per method on every page: Okabe-Ito, safe for the common colour-vision deficiencies
(Okabe & Ito 2008). Pages import these; none defines its own."""

#: The method's colour in every plot, legend and table swatch of the app.
METHOD_COLOURS = {"ep": "#D55E00", "qp": "#0072B2", "vb": "#009E73", "laplace": "#CC79A7", "mcmc": "#999999"}

#: The Sparse page's methods. Okabe-Ito has no colours left beyond the five above and the data's
#: orange, so FITC, VFE, DTC and PITC take Paul Tol's "muted" scheme (also colour-blind safe) and
#: each method also has its own dash pattern (app/sparse_figures.py).
SPARSE_COLOURS = {"exact": "#000000", "fitc": "#882255", "vfe": "#44AA99", "dtc": "#999933", "pitc": "#332288",
                  "power_ep": "#56B4E9"}
