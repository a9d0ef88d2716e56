"""``python -m clustersim.calibration.bench``: the bench without the CLI's dependencies (see :func:`.runner.main`)."""

from clustersim.calibration.bench.runner import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
