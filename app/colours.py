"""One colour per method on every page: Okabe-Ito, safe for the common colour-vision deficiencies
(Okabe & Ito 2008). Pages import these; none defines its own."""

#: The method's colour in every plot, legend and table swatch of the app.
METHOD_COLOURS = {"ep": "#D55E00", "qp": "#0072B2", "vb": "#009E73", "laplace": "#CC79A7", "mcmc": "#999999",
                  # the VSGP page's two sparse priors (sky blue; black, outlined in white on the grey maps)
                  "vsgp": "#56B4E9", "fitc": "#000000"}
