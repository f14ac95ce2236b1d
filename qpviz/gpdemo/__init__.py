"""Whole-GP demonstrations for the dashboard: 1-D data presets (:mod:`.presets`), the computations
of the "GP 1-D" page (:mod:`.oned`: every method's fit on a grid, distances to the MCMC reference,
a site-by-site EP / QP stepper and Projection Explorer links) and of the "GP 2-D" page
(:mod:`.twod`: 2-D classification presets and every method's maps on a grid). The pages' state,
validation and cached fits, without widgets: :mod:`.oned_model` (GP 1-D, its files and links in
:mod:`.oned_data`), :mod:`.twod_model` (GP 2-D) and :mod:`.sparse_model`
("Sparse", its computations in :mod:`.sparse_demo`); :mod:`.jobs` runs the pages' long jobs (MCMC
references, optimisation) in one thread pool shared by every session.

Everything here is plain NumPy / qpviz: the app only wires widgets to it.
"""
