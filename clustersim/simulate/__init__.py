"""Turn a scenario into results: resolve files, build the workload, run the engine."""


def __getattr__(name: str):
    """Lazy exports (Contract 5): ``run_scenario`` and ``RunResult``."""
    if name in ("run_scenario", "RunResult"):
        from clustersim.simulate import run

        return getattr(run, name)
    raise AttributeError(name)
