"""What-if studies: vary scenario fields along axes, run every point, collect tables and plots.

``study`` (the file schema), ``expand`` (axes to points), ``point`` (reading and evaluating one
point), ``executors`` (local process pool, serial, Dask, Slurm), ``store`` (the resumable
journal), ``tables`` (CSV and Parquet), ``analysis`` (speedup and efficiency), ``plots`` (PNG) and
``runner`` (:func:`run_study`, which ties them together).

>>> from clustersim.sweep import run_study                  # doctest: +SKIP
>>> res = run_study("study-pi-scaling", "out/pi", executor="serial")   # doctest: +SKIP
>>> [round(r["step_time_s"], 2) for r in res.rows]          # doctest: +SKIP
"""


def __getattr__(name: str):
    """Lazy exports: ``run_study``, ``SweepResult``, ``load_study``, ``Study``."""
    if name in ("run_study", "SweepResult"):
        from clustersim.sweep import runner

        return getattr(runner, name)
    if name in ("load_study", "Study"):
        from clustersim.sweep import study

        return getattr(study, name)
    raise AttributeError(name)
