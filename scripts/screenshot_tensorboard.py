"""Screenshots of TensorBoard on a log dir, as a user sees it: headless Chromium on TensorBoard's own pages.

    ordergrad-rl reproduce tailrisk --out results/tailrisk --tensorboard runs/tailrisk    # make demo
    python scripts/screenshot_tensorboard.py runs/tailrisk docs/figures/dashboards

Starts ``tensorboard --logdir LOGDIR`` on a free port, opens with Chromium (``--chromium``; Debian's package:
``apt install chromium``) the pages below and writes one PNG each to OUT, then stops TensorBoard:

* ``timeseries_methods.png``: Time Series, runs coloured by method (the address ``ordergrad-rl dashboard``
  prints), filtered to ``methods/eval_risk/cvar_0.2`` and ``methods/eval_risk/mean``: one line per method;
* ``timeseries_seeds.png``: the same colours on ``eval_risk/cvar_0.2`` of every run (seeds and means);
* ``custom_scalars.png``: the Custom Scalars tab (the methods' bands first);
* ``hparams.png``: the HParams table with the columns TensorBoard ticks by default.

Chromium runs with ``--virtual-time-budget`` (the page's timers run until the charts are drawn), no Playwright or
driver needed. Run ``ordergrad-rl dashboard LOGDIR`` first on log dirs not written by ``reproduce tailrisk`` or
``sweep``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from ordergrad_rl.zoo.dashboards import find_runs, tensorboard_url

#: Chromium flags for a closed network (no background connections) and no GPU.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_loaded(address: str, runs: int, seconds: float = 120.0) -> None:
    """Wait until TensorBoard lists ``runs`` runs (it reads a log dir in the background after it starts)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if len(json.loads(urllib.request.urlopen(f"{address}/data/runs", timeout=2).read())) >= runs:
                time.sleep(5)  # the last run's events
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"TensorBoard at {address} did not list {runs} runs within {seconds:.0f} s")


def screenshot(chromium: str, url: str, path: Path, size: tuple[int, int], budget_ms: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}"]
        command += [f"--virtual-time-budget={budget_ms}", f"--screenshot={path}", url]
        subprocess.run(command, check=True, capture_output=True, timeout=180)
    print(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", type=Path, help="the TensorBoard log dir")
    parser.add_argument("out", type=Path, help="directory for the PNG files")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium", help="Chromium executable")
    parser.add_argument("--budget-ms", type=int, default=20_000, help="virtual time each page gets to draw")
    args = parser.parse_args()
    if shutil.which(args.chromium) is None and not Path(args.chromium).exists():
        raise SystemExit(f"no Chromium at {args.chromium!r}: apt install chromium, or give --chromium PATH")
    groups = find_runs(args.logdir)
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(args.logdir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The seeds, the aggregated runs (methods of two or more seeds) and the root's layout file.
        aggregated = sum(len(runs) >= 2 for runs in groups.values())
        wait_until_loaded(address, sum(len(runs) for runs in groups.values()) + aggregated + (aggregated > 0))
        base, fragment = tensorboard_url(sorted(groups), address).split("#")

        def filtered(tags: str) -> str:
            return f"{base}&{urllib.parse.urlencode({'tagFilter': tags})}#{fragment}"

        pages = {
            "timeseries_methods.png": filtered("^methods/eval_risk/(cvar_0.2|mean)$"),
            "timeseries_seeds.png": filtered("^eval_risk/cvar_0.2$"),
            "custom_scalars.png": f"{address}/#custom_scalars",
            "hparams.png": f"{address}/#hparams",
        }
        for name, url in pages.items():
            screenshot(args.chromium, url, args.out / name, (1600, 1000), args.budget_ms)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
