"""What-if studies: vary scenario fields along axes, run every point, collect tables and plots.

``study`` (the file schema), ``expand`` (axes to points), ``point`` (reading and evaluating one
point), ``executors`` (local process pool, serial, Dask, Slurm), ``store`` (the resumable
journal), ``tables`` (CSV and Parquet), ``analysis`` (speedup and efficiency), ``plots`` (PNG) and
``runner`` (:func:`run_study`, which ties them together).

The shipped Monte-Carlo pi study (strong scaling over GPU counts), written to a scratch folder:

>>> import shutil, tempfile
>>> from clustersim.sweep import run_study
>>> out = tempfile.mkdtemp()
>>> res = run_study("study-pi-scaling", out, executor="serial")
>>> [round(res.rows[0]["step_time_s"] / r["step_time_s"], 1) for r in res.rows]  # speed-up
[1.0, 2.0, 4.0, 8.0]
>>> shutil.rmtree(out)
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
