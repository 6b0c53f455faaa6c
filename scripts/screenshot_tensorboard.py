"""Screenshots of TensorBoard on a log dir, as a user sees it: headless Chromium on TensorBoard's own pages.

    ordergrad-rl reproduce tailrisk --out results/tailrisk --tensorboard runs/tailrisk    # make demo
    python scripts/screenshot_tensorboard.py runs/tailrisk docs/figures/dashboards

Starts ``tensorboard --logdir LOGDIR`` on a free port, waits until it has read every run, opens with Chromium
(``--chromium``; Debian's package: ``apt install chromium``) driven by Playwright (``pip install playwright``; not
a dependency of the package, and no ``playwright install`` needed) the pages below and writes one PNG each to
OUT, then stops TensorBoard:

* ``timeseries_methods.png``: Time Series, runs coloured by method (the address ``ordergrad-rl dashboard``
  prints), filtered to ``methods/eval_risk/cvar_0.2`` and ``methods/eval_risk/mean``: one line per method;
* ``timeseries_seeds.png``: the same colours on ``eval_risk/cvar_0.2`` of every run (seeds and means);
* ``custom_scalars.png``: the Custom Scalars tab (the methods' bands first);
* ``hparams.png``: the HParams table with the columns TensorBoard ticks by default.

Each page gets ``--settle-ms`` of real time after loading: TensorBoard draws its charts in a worker, which
Chromium's ``--virtual-time-budget`` does not wait for on a busy machine. Run ``ordergrad-rl dashboard LOGDIR``
first on log dirs not written by ``reproduce tailrisk`` or ``sweep``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.zoo.dashboards import aggregates_below, find_runs, run_prefixes, tensorboard_url

#: Chromium flags for a closed network (no background connections) and no GPU.
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-unsafe-swiftshader",  # software WebGL for the charts (there is no GPU)
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def expected_runs(logdir: Path) -> int:
    """The runs TensorBoard lists with scalars: the seeds and the aggregated runs ``ordergrad-rl dashboard`` wrote
    (none if it was not run; none for a method whose runs log no risk scalars)."""
    return sum(len(runs) for runs in find_runs(logdir).values()) + len(aggregates_below(logdir))


def wait_until_loaded(address: str, runs: int, seconds: float = 300.0) -> None:
    """Wait until TensorBoard lists ``runs`` runs and their scalar tags stop changing (it reads a log dir in the
    background after it starts, run by run)."""
    deadline = time.monotonic() + seconds
    previous, stable = None, 0
    while time.monotonic() < deadline:
        try:
            tags = json.loads(urllib.request.urlopen(f"{address}/data/plugin/scalars/tags", timeout=5).read())
        except OSError:
            tags = {}
        count = sum(len(run_tags) for run_tags in tags.values())
        stable = stable + 1 if len(tags) >= runs and count == previous else 0
        if stable >= 3:
            return
        previous = count
        time.sleep(2)
    raise SystemExit(f"TensorBoard at {address} did not load {runs} runs within {seconds:.0f} s")


def screenshot(page: Any, url: str, path: Path, settle_ms: int) -> None:
    """Open ``url`` in a fresh load and wait ``settle_ms`` of real time (the charts draw in a worker)."""
    page.goto("about:blank")
    page.goto(url)
    page.wait_for_load_state("load")
    page.wait_for_timeout(settle_ms)
    page.screenshot(path=str(path), timeout=180_000)
    print(path)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", type=Path, help="the TensorBoard log dir")
    parser.add_argument("out", type=Path, help="directory for the PNG files")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium", help="Chromium executable")
    parser.add_argument("--settle-ms", type=int, default=15_000, help="time each page gets to draw its charts")
    args = parser.parse_args(argv)
    try:  # after parsing: --help works without Playwright, an optional tool of this script only
        from playwright.sync_api import sync_playwright  # type: ignore[import-not-found]  # optional
    except ImportError:
        raise SystemExit("needs Playwright: pip install playwright (no 'playwright install' needed)") from None
    if shutil.which(args.chromium) is None and not Path(args.chromium).exists():
        raise SystemExit(f"no Chromium at {args.chromium!r}: apt install chromium, or give --chromium PATH")
    try:
        groups = find_runs(args.logdir)
    except CommandError as err:  # no such log dir, or no runs below it
        raise SystemExit(str(err)) from None
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(args.logdir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_loaded(address, expected_runs(args.logdir))
        base, fragment = tensorboard_url(run_prefixes(groups, args.logdir), address).split("#")

        def filtered(tags: str) -> str:
            return f"{base}&{urllib.parse.urlencode({'tagFilter': tags})}#{fragment}"

        pages = {
            "timeseries_methods.png": filtered("^methods/eval_risk/(cvar_0.2|mean)$"),
            "timeseries_seeds.png": filtered("^eval_risk/cvar_0.2$"),
            "custom_scalars.png": f"{address}/#custom_scalars",
            "hparams.png": f"{address}/#hparams",
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=list(CHROMIUM_FLAGS))
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            for name, url in pages.items():
                # Custom Scalars fetches every chart of every run one request at a time: give it longer.
                settle = args.settle_ms * (4 if name == "custom_scalars.png" else 1)
                screenshot(page, url, args.out / name, settle)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
