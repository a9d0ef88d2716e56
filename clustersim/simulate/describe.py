"""What a run is, in words: the header facts of a report and the ranks' parallel coordinates.

The report (:mod:`clustersim.report.html`) renders what it is given; this module prepares the
part of it that comes from the resolved scenario rather than from the simulated step.
"""

from __future__ import annotations

from clustersim import __version__
from clustersim.simulate.resolve import ResolvedScenario


def run_description(rs: ResolvedScenario, source_label: str | None = None, reduced: bool = True) -> dict:
    """Header facts and rank layout of a resolved scenario (the ``meta`` of ``render_html``).

    Returns ``rows`` (label, value pairs: scenario file, cluster, topology, profile, parallelism
    or workload), ``layout`` (rank -> ``{"tp": .., "cp": .., "ep": .., "dp": .., "pp": ..}``, or
    None when the parallel degrees do not cover the cluster), ``description``, ``iterations``
    and ``version`` (of clustersim).
    """
    sc, cluster, profile = rs.scenario, rs.cluster, rs.profile
    spec = cluster.gpu_spec
    rows: list[tuple[str, str]] = []
    if source_label:
        rows.append(("scenario file", source_label))
    rows.append(("cluster", f"{cluster.name}: {cluster.n_gpus} x {spec.name} on {cluster.n_hosts} host"
                            f"{'s' if cluster.n_hosts != 1 else ''}"))
    rows.append(("topology", rs.topology_file.name if rs.topology_file else "-"))
    prof = profile.name + (f" ({rs.profile_file.name})" if rs.profile_file else "")
    rows.append(("profile", prof))
    par = sc.parallelism
    layout = None
    if sc.model is not None:
        rows.append(("parallelism", f"tp {par.tp}, pp {par.pp}, dp {par.dp}, cp {par.cp}, ep {par.ep}; "
                                    f"schedule {par.schedule}; ZeRO {par.zero}; order {par.order}"))
        rows.append(("simulated replicas", "one data-parallel replica (identical replicas)" if reduced
                     else "every data-parallel replica"))
    elif sc.jobs is not None:
        rows.append(("workload", f"{len(sc.jobs)} jobs on one fabric: " + ", ".join(j.name for j in sc.jobs)))
    else:
        rows.append(("workload", f"generic job, {sc.job.iterations} iteration"
                                 f"{'s' if sc.job.iterations != 1 else ''}"))
    if par.dp * par.tp * par.pp * par.cp == cluster.n_gpus:
        from clustersim.workload.layout import Layout

        layout = Layout.from_parallelism(par).coords
    return {"rows": rows, "layout": layout, "description": sc.description or "",
            "iterations": sc.job.iterations if sc.job is not None else 1,
            "version": __version__}
