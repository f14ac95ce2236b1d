"""Whole-GP demonstrations for the dashboard: 1-D data presets (:mod:`.presets`), the computations
of the "GP 1-D" page (:mod:`.oned`: every method's fit on a grid, distances to the MCMC reference,
a site-by-site EP / QP stepper and Projection Explorer links) and of the "GP 2-D" page
(:mod:`.twod`: 2-D classification presets and every method's maps on a grid). The pages' state,
validation and cached fits, without widgets: :mod:`.oned_model` (GP 1-D, its files and links in
:mod:`.oned_data`), :mod:`.twod_model` (GP 2-D), :mod:`.sparse_model` ("Sparse", its computations
in :mod:`.sparse_demo`), :mod:`.vsgp_model` (VSGP; :mod:`.vsgp_demo`), :mod:`.scalable_model`
("Scalable": the session's settings and training runs; :mod:`.scalable_demo`) and
:mod:`.variance_model` ("Variance effects"; :mod:`qpviz.variance_effects`); :mod:`.jobs` runs the
pages' long jobs (MCMC references, optimisation, the variance study) in one thread pool shared by
every session and holds the one results cache class, :class:`.jobs.LRUCache`.

Everything here is plain NumPy / qpviz: the app only wires widgets to it.
"""
