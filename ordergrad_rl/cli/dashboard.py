"""Dashboards that compare many TensorBoard runs: one aggregated run per method, charts per method, HParams.

    ordergrad-rl dashboard runs/tailrisk
    tensorboard --logdir runs/tailrisk        # and open the address printed by the first command

The runs below LOGDIR are grouped by method (a run's path without its seed and SB3's run counter: og-cvar/seed3_1
and og-cvar/seed4_1 -> og-cvar; OrderGradPPO_cvar0.2@128_1 and _2 -> OrderGradPPO_cvar0.2@128), as compare
groups them: the seeds right in LOGDIR (runs/og-cvar/seed0_1 and seed1_1) are one method named after it. For every
method with two or more runs that log risk scalars it writes <LOGDIR>/<method>/mean_over_seeds (for the seeds right
in LOGDIR, <LOGDIR>/mean_over_seeds): the mean over seeds of
the eval_risk/* and risk/* mean, std, min, CVaR_0.05, CVaR_0.1, CVaR_0.2 and median (and risk/objective) under
the seeds' tags, so it is the method's row of the HParams table (the arguments its seeds share, plus seeds); and
for CVaR_0.2 and the mean, the mean with the range of the seeds as a band under methods/* (one chart, a line per
method, x = % of training) and <method>/* (charts per method, each with its own x-axis). At LOGDIR's root it
writes the Custom Scalars layout (the methods' bands side by side, then each method's). Run it again after
adding or removing runs: it replaces what it wrote.
The printed address opens TensorBoard's Time Series with one colour per method (runColorGroup). `reproduce
tailrisk --tensorboard` and `sweep` run it on the runs they write; `compare` skips the aggregated runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.reports import markdown_table
from ordergrad_rl.zoo.dashboards import (
    Dashboards,
    run_prefixes,
    tensorboard_command,
    tensorboard_url,
    write_dashboards,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl dashboard``."""
    parser.add_argument("logdir", type=Path, metavar="LOGDIR", help="the TensorBoard log dir holding the runs")
    parser.add_argument(
        "--address",
        default="http://localhost:6006",
        metavar="URL",
        help="where TensorBoard serves LOGDIR, for the printed command and address (default: %(default)s)",
    )


def aggregated(dashboards: Dashboards, group: str) -> str:
    """The aggregated run of ``group``, else why it has none."""
    if group in dashboards.aggregates:
        return str(dashboards.aggregates[group])
    return "- (one run)" if len(dashboards.groups[group]) == 1 else "- (no eval_risk/* or risk/* scalars)"


def run(args: argparse.Namespace) -> int:
    try:
        command = tensorboard_command(args.logdir, args.address)
    except ValueError as err:  # urllib's, on the port
        raise CommandError(f"--address {args.address}: {err}") from None
    dashboards = write_dashboards(args.logdir)
    rows = [[group, len(runs), aggregated(dashboards, group)] for group, runs in dashboards.groups.items()]
    print(markdown_table(["method", "runs", "aggregated run"], rows))
    print(f"TensorBoard: {command}")  # a command to paste
    print(f"open: {tensorboard_url(run_prefixes(dashboards.groups, args.logdir), args.address.rstrip('/'))}")
    return 0
