"""The ``clustersim`` command line (typer + rich): parse, call the library, render.

Every user error exits with status 2 and one message naming file, field and rule.
"""

from __future__ import annotations

import sys

import typer

from clustersim import __version__
from clustersim.cli import calibrate as _calibrate
from clustersim.cli import collective as _collective
from clustersim.cli import compare as _compare
from clustersim.cli import goodput as _goodput
from clustersim.cli import inputs as _inputs
from clustersim.cli import plan as _plan
from clustersim.cli import report as _report
from clustersim.cli import run as _run
from clustersim.cli import scenario as _scenario
from clustersim.cli import sweep as _sweep
from clustersim.cli import topo as _topo
from clustersim.cli.common import fail, finite_options
from clustersim.errors import ClusterSimError

app = typer.Typer(
    name="clustersim",
    help="Simulate GPU training clusters: topologies, NCCL collectives, training steps, calibration.\n\n"
    "Examples:\n\n"
    "  clustersim topo show dgx-h100\n\n"
    "  clustersim collective all_reduce --topology hgx-h200 --gpus 2 --sizes 1MiB:4GiB\n\n"
    "  clustersim run scenarios/gpt-1b-ddp.yaml --json\n\n"
    "  clustersim sweep scenarios/study-pi-scaling.yaml -o out/pi\n\n"
    "  clustersim plan scenarios/gpt3-175b.yaml --top 5\n\n"
    "  clustersim report out/pi -o pi.html",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"clustersim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit.")) -> None:
    """clustersim command line."""


app.add_typer(_topo.app, name="topo")
app.add_typer(_calibrate.app, name="calibrate")
app.add_typer(_inputs.app, name="scenario")
_scenario.register(app)
_collective.register(app)
_run.register(app)
_sweep.register(app)
_goodput.register(app)
_plan.register(app)
_report.register(app)
_compare.register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning user errors into exit code 2."""
    try:
        finite_options(typer.main.get_command(app)).main(args=argv, standalone_mode=True)
    except ClusterSimError as exc:
        fail(exc)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None


if __name__ == "__main__":  # pragma: no cover
    main()
