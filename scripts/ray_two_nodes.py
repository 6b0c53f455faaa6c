"""A two-node Ray cluster simulated on one machine, and an ``ordergrad-rl sweep --address`` on it.

    python scripts/ray_two_nodes.py --out /tmp/two_nodes

Starts a head node (``ray start --head --num-cpus 1``) and a second node (``ray start --address HEAD --num-cpus 1``),
runs a 2 objectives x 2 seeds sweep of one-CPU trials on the cluster with ``--address HEAD``, prints the node each
trial ran on, and exits with status 0 if the trials used both nodes. Each node runs in its own process group,
which the script stops at the end (SIGINT, then SIGKILL after a timeout): it never touches other Ray instances.

Local only: both nodes listen on 127.0.0.1 and Ray's token authentication is off (RAY_AUTH_MODE=disabled) for the
three processes; a real cluster keeps its authentication, and its --out must be on storage every node sees.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
ENV = os.environ | {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
SWEEP = ["env=RiskyBandit-v0", "algo=reinforce", "objective=mean,cvar0.25", "seed=0,1", "n_episodes=16"]
SWEEP += ["timesteps=3200", "eval_episodes=16"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(args: list[str], log: Path) -> subprocess.Popen:
    """``ray start ... --block`` in a new process group (stopped as a whole by :func:`stop_node`)."""
    with open(log, "w") as handle:
        return subprocess.Popen([RAY, "start", *args, "--block"], stdout=handle, stderr=subprocess.STDOUT, env=ENV,
                                start_new_session=True)  # fmt: skip


def stop_node(node: subprocess.Popen, timeout: float = 30.0) -> None:
    """Stop the node's process group: SIGINT (``ray start --block`` shuts its processes down), then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(node.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(node.pid, 0)
            except ProcessLookupError:
                node.wait()
                return
            time.sleep(0.5)


def alive_nodes(address: str) -> int:
    """Number of alive nodes of the cluster (asked in a subprocess, so this script never holds a Ray connection)."""
    code = (
        f"import ray; ray.init(address={address!r}, log_to_driver=False); print(sum(n['Alive'] for n in ray.nodes()))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    return int(result.stdout.strip().splitlines()[-1]) if result.returncode == 0 and result.stdout.strip() else 0


def wait_for(nodes: int, address: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while alive_nodes(address) < nodes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the cluster at {address} did not reach {nodes} nodes in {timeout:.0f} s")
        time.sleep(2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="sweep output (default: a temporary directory)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ray_two_nodes_"))
    out = (args.out or work / "sweep").resolve()
    port = free_port()
    address = f"127.0.0.1:{port}"
    nodes = []
    try:
        head = ["--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "1"]
        head += ["--temp-dir", str(work / "ray"), "--include-dashboard", "false", "--disable-usage-stats"]
        nodes.append(start_node(head, work / "head.log"))
        wait_for(1, address)
        second = ["--address", address, "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
        nodes.append(start_node(second, work / "second.log"))
        wait_for(2, address)
        print(f"cluster {address}: 2 nodes of 1 CPU each (logs in {work})")
        sweep = [sys.executable, "-m", "ordergrad_rl.cli", "sweep", "--grid", *SWEEP, "--address", address]
        start = time.perf_counter()
        result = subprocess.run([*sweep, "--out", str(out), "--quiet"], env=ENV, capture_output=True, text=True)
        print(result.stdout)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return result.returncode
        rows = [json.loads(path.read_text()) for path in sorted((out / "trials").glob("*.json"))]
        print(f"sweep: {len(rows)} trials in {time.perf_counter() - start:.0f} s\n")
        print("| trial | Ray node | pid | train seconds |\n|---|---|---|---|")
        for row in rows:
            print(f"| {row['trial_id']} | {row['node'][:12]} | {row['pid']} | {row['train_seconds']:.1f} |")
        placed = Counter(row["node"] for row in rows)
        print(f"\ntrials per node: {dict((node[:12], n) for node, n in placed.items())}")
        return 0 if len(placed) == 2 else 1
    finally:
        for node in reversed(nodes):
            stop_node(node)


if __name__ == "__main__":
    sys.exit(main())
