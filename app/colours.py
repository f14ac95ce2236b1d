"""One colour per method on every page: Okabe-Ito, safe for the common colour-vision deficiencies
(Okabe & Ito 2008). Pages import these; none defines its own."""

#: The method's colour in every plot, legend and table swatch of the app.
METHOD_COLOURS = {
    "ep": "#D55E00", "qp": "#0072B2", "vb": "#009E73", "laplace": "#CC79A7", "mcmc": "#999999",
    # the sparse methods (Sparse and VSGP pages). Okabe-Ito has no colours left beyond the five
    # above and the data's orange, so these take Paul Tol's "muted" scheme (also colour-blind
    # safe); on the Sparse page each also has its own dash pattern (app/sparse_figures.py), and on
    # the grey maps of the VSGP page the contours get a white outline
    "exact": "#000000", "fitc": "#882255", "vfe": "#44AA99", "dtc": "#999933", "pitc": "#332288",
    "power_ep": "#AA4499", "vsgp": "#56B4E9",
    # the Scalable page (issue 13): Paul Tol muted colours not used above; GFITC is FITC-EP, so it
    # keeps FITC's colour; the logistic-regression baseline is a grey (dashed) reference line
    "sep": "#CC6677", "svi": "#117733", "gfitc": "#882255", "logistic": "#666666",
}

#: The Sparse page's methods, in its legend's order.
SPARSE_COLOURS = {name: METHOD_COLOURS[name] for name in ("exact", "fitc", "vfe", "dtc", "pitc", "power_ep")}
