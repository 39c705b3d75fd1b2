"""The `prime` CLI's in-process cost: its own API client classes (prime 0.18.0), imported once in
one warm Python process, calling the endpoints each benchmarked CLI command calls, in a loop.

This is the floor of what the CLI does per operation once start-up is paid (HTTP with httpx,
pydantic models); the gap between it and a `prime ...` subprocess is the start-up an agent
that shells out pays on every call.

Usage: python prime_inprocess.py ITERATIONS MAX_SECONDS RUN_ID LOGS_RUN_ID
Environment: PRIME_API_BASE_URL, PRIME_API_KEY (the sandbox), HOME (a scratch directory).
Prints one JSON object: {"op name": [nanoseconds, ...], ...}.
"""

import json
import sys
import time

from prime_cli.api.rl import RLClient
from prime_cli.api.training import HostedTrainingClient
from prime_cli.core.client import APIClient


def main() -> None:
    iterations, max_seconds = int(sys.argv[1]), float(sys.argv[2])
    run_id, logs_run_id = sys.argv[3], sys.argv[4]
    api = APIClient()
    rl = RLClient(api)
    training = HostedTrainingClient(api)
    ops = {
        "list runs": lambda: rl.list_runs(),
        "get run": lambda: rl.get_run(run_id),
        "logs tail 1000": lambda: rl.get_logs(logs_run_id, tail_lines=1000),
        "logs tail 5000": lambda: rl.get_logs(logs_run_id, tail_lines=5000),
        "metrics": lambda: rl.get_metrics(run_id),
        "progress": lambda: rl.get_progress(run_id),
        "models": lambda: training.get_available_fft(),
    }
    out = {}
    for name, op in ops.items():
        for _ in range(5):  # warm the connection pool and the import caches
            op()
        samples = []
        deadline = time.monotonic() + max_seconds
        while len(samples) < iterations and time.monotonic() < deadline:
            t0 = time.perf_counter_ns()
            op()
            samples.append(time.perf_counter_ns() - t0)
        out[name] = samples
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
