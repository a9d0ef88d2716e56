"""Fit a calibration profile (Contract 4) from measurements (Contract 3).

Three stages, one module each or more, so that the fitter itself can change
without touching how measurements are read or how a profile is written:

read and group the measurements
    :mod:`.measurements` (rows checked and normalised, files read),
    :mod:`.grouping` (fit contexts, hold-out split).
fit a model
    :mod:`.line` (one weighted, bounded alpha-beta line with intervals),
    :mod:`.piecewise` (regimes chosen from the data and joined across gaps),
    :mod:`.collective` (a context's rows into a collective entry),
    :mod:`.links` (link classes from 2-rank fits),
    :mod:`.linkmodel` (NCCL's cost structure fitted jointly over ops, sizes and
    rank counts: per link class and protocol an efficiency and a per-step latency;
    the model it fits, and which algorithm and protocol NCCL's own table runs, are
    :mod:`clustersim.collectives.linkmodel` and :mod:`clustersim.collectives.ncclchoice`),
    :mod:`.transfer` (size and scale checks of that model, its ~95% band),
    :mod:`.compute` (GEMM table, HBM, launch), :mod:`.kernels` (the kernel-class tables of
    ``calibrate bench --kernels``), :mod:`.host` (framework call,
    per-call overhead, communicator start-up).
write the profile
    :mod:`.assemble` (:func:`fit_profile`: every section merged into an
    optional base profile), :mod:`.profile_file` (rounding, YAML, write, load).

Every public name is importable from here.

Examples
--------
>>> import numpy as np
>>> S = np.array([1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9])
>>> segs = fit_piecewise(S, 10e-6 + S / 200e9, max_segments=1)
>>> round(segs[0].alpha_s * 1e6, 3), round(segs[0].algbw / 1e9, 1)
(10.0, 200.0)
"""

from clustersim.calibration.fit.assemble import FitResult, fit_profile
from clustersim.calibration.fit.collective import Switches, entry_key, fit_collective, fit_collectives
from clustersim.calibration.fit.compute import compute_section, fit_gemm, peak_tflops_for
from clustersim.calibration.fit.grouping import (
    COLLECTIVE_KEY, HOLDOUTS, collective_key, group_collectives, split_holdout,
)
from clustersim.calibration.fit.host import fit_comm_init, host_section
from clustersim.calibration.fit.line import MAX_ALGBW, MIN_SLOPE, LineFit, bootstrap_ci, fit_line
from clustersim.calibration.fit.linkmodel import LinkModel, fit_link_model, refine
from clustersim.calibration.fit.links import link_params_from, links_from
from clustersim.calibration.fit.measurements import Measurements, normalise_row, read_measurements
from clustersim.calibration.fit.piecewise import PiecewiseSegment, fit_piecewise
from clustersim.calibration.fit.profile_file import load_profile, profile_yaml, rounded, write_profile
from clustersim.calibration.fit.transfer import TransferRow, band_factor, scale_check, size_check

__all__ = [
    "COLLECTIVE_KEY", "HOLDOUTS", "MAX_ALGBW", "MIN_SLOPE",
    "FitResult", "LineFit", "LinkModel", "TransferRow", "Measurements", "PiecewiseSegment", "Switches",
    "band_factor", "bootstrap_ci", "collective_key", "fit_link_model", "refine", "scale_check", "size_check", "compute_section", "entry_key", "fit_collective", "fit_collectives",
    "fit_comm_init", "fit_gemm", "fit_line", "fit_piecewise", "fit_profile", "group_collectives", "host_section",
    "link_params_from", "links_from", "load_profile", "normalise_row", "peak_tflops_for", "profile_yaml",
    "read_measurements", "rounded", "split_holdout", "write_profile",
]
