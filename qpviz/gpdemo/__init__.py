"""Whole-GP demonstrations for the dashboard: 1-D data presets (:mod:`.presets`) and the
computations of the "GP 1-D" page (:mod:`.oned`: every method's fit on a grid, distances to the
MCMC reference, a site-by-site EP / QP stepper and Projection Explorer links).

Everything here is plain NumPy / qpviz: the app only wires widgets to it.
"""
