"""Screenshots of a running TensorBoard's HParams (table, parallel coordinates) and Custom Scalars tabs.

    tensorboard --logdir runs/tailrisk --port 6006 &
    python scripts/screenshot_tensorboard.py http://127.0.0.1:6006 docs/figures \\
        --chromium /usr/bin/chromium-headless-shell

Needs Playwright (``pip install playwright``; not a dependency of the package) and a Chromium: Debian's
``chromium-headless-shell`` package, or Playwright's own (``playwright install chromium``) without --chromium.
TensorBoard ticks the five alphabetically first hparams; the script ticks the ones that tell OrderGrad runs apart
(objective, k, n_episodes) instead, as a user would. docs/figures/tensorboard_hparams.png is its parallel
coordinates view of a shortened ``make demo`` (reproduce tailrisk --algo reinforce --seeds 2 --updates 100).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="TensorBoard's address, e.g. http://127.0.0.1:6006")
    parser.add_argument("out", type=Path, help="directory for the PNG files")
    parser.add_argument("--chromium", default=None, help="Chromium executable (default: Playwright's)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1700, "height": 560})
        page.goto(f"{args.url}/#hparams")
        page.wait_for_selector("text=Trial ID", timeout=60_000)
        for name in ("advantage", "ent_coef", "gae_lambda", "env", "objective", "k", "n_episodes"):
            page.get_by_role("checkbox", name=name, exact=True).first.click()  # untick the first three, tick ours
        page.wait_for_timeout(2000)
        page.screenshot(path=args.out / "hparams_table.png")
        page.get_by_text("PARALLEL COORDINATES VIEW").click()
        page.set_viewport_size({"width": 1700, "height": 800})
        page.wait_for_timeout(3000)
        page.screenshot(path=args.out / "tensorboard_hparams.png")
        page.goto(f"{args.url}/#custom_scalars")
        page.set_viewport_size({"width": 1600, "height": 1100})
        page.wait_for_timeout(8000)
        page.screenshot(path=args.out / "custom_scalars.png")
        browser.close()


if __name__ == "__main__":
    main()
