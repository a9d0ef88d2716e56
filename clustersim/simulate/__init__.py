"""Turn a scenario into results: resolve files, build the workload, run the engine."""
