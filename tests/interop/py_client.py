"""Drives factory-mcp through the official Python MCP SDK (PyPI mcp==2.3.0) and checks every tool.

usage: python py_client.py stdio|http TARGET auto|legacy RUN_ID DEST_DIR

TARGET is, for `stdio`, the server's command line: a JSON array of strings (what tests pass) or
a shell-quoted string; for `http`, the URL of the MCP endpoint (http://127.0.0.1:PORT/mcp).

For `stdio` the server is spawned with this process's PRIME_*, XDG_*, FACTORY_MCP_* and RUST_LOG
variables (on top of the SDK's default inherited environment: HOME, PATH, ...).
PRIME_API_KEY (or INTEROP_API_KEY, which wins) is the key the server uses: `whoami` must mask it.
For `http`, INTEROP_HTTP_TOKEN is the bearer token the server requires.

RUN_ID names a run that is RUNNING with some steps done (logs, metrics and traces exist). DEST_DIR
is a directory inside the server's workspace for `fetch_traces`.

Prints one JSON line (the summary) on stdout as its last line; exits non-zero on any failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import traceback
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
import mcp.types as types

EXPECTED_TOOLS = {
    "whoami",
    "list_teams",
    "list_models",
    "list_gpus",
    "list_runs",
    "get_run",
    "get_components",
    "get_logs",
    "get_metrics",
    "get_progress",
    "list_checkpoints",
    "list_traces",
    "fetch_traces",
}
EXPECTED_PROTOCOL = {"auto": "2026-07-28", "legacy": "2025-11-25"}
UNKNOWN_RUN_ID = "interop-no-such-run-0000"
PER_REQUEST_TIMEOUT_S = 60.0
OVERALL_TIMEOUT_S = 150.0


class CheckFailed(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def dump(result: types.CallToolResult) -> str:
    return json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True))


class Runner:
    def __init__(self, client: Client, run_id: str, dest_dir: str, api_key: str | None):
        self.c = client
        self.run_id = run_id
        self.dest_dir = dest_dir
        self.api_key = api_key
        self.output_schemas: dict[str, dict[str, Any]] = {}
        self.called: list[str] = []

    async def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Calls a tool that must succeed; returns its structured content.

        `Client.call_tool` (via `ClientSession.validate_tool_result`) already validates the
        structured content against the listed output schema and raises on a mismatch or when it
        is missing. We validate once more here, independently, so that a change in the SDK's
        behaviour cannot silently switch the check off.
        """
        try:
            r = await self.c.call_tool(name, args)
        except Exception as e:  # the SDK raises RuntimeError on schema mismatch
            raise CheckFailed(f"{name}: the client rejected the result: {type(e).__name__}: {e}") from e
        self.called.append(name)
        check(not r.is_error, f"{name}: is_error is true: {text_of(r)[:500]}")
        sc = r.structured_content
        check(sc is not None, f"{name}: no structured_content")
        check(isinstance(sc, dict), f"{name}: structured_content is not an object: {type(sc).__name__}")
        check(text_of(r).strip() != "", f"{name}: no text block beside the structured content")
        validate(name, self.output_schemas[name], sc)
        if self.api_key:
            check(self.api_key not in dump(r), f"{name}: the API key appears in the result")
        return sc

    async def call_error(self, name: str, args: dict[str, Any]) -> str:
        r = await self.c.call_tool(name, args)
        self.called.append(name)
        check(r.is_error is True, f"{name}{args}: expected is_error, got {dump(r)[:500]}")
        return text_of(r)


def validate(name: str, schema: dict[str, Any], instance: Any) -> None:
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path)
        raise CheckFailed(f"{name}: structured content does not match the output schema at /{path}: {e.message}")


async def exercise(r: Runner, mode: str) -> dict[str, Any]:
    c = r.c
    proto = c.protocol_version
    check(proto == EXPECTED_PROTOCOL[mode], f"negotiated {proto!r}, expected {EXPECTED_PROTOCOL[mode]!r} for mode {mode}")

    listed = await c.list_tools(cache_mode="refresh")
    names = [t.name for t in listed.tools]
    check(len(names) == len(set(names)), f"duplicate tool names: {names}")
    # Every tool this script knows must be there; tools added later are reported, not failed
    # (extend this script to call them).
    check(EXPECTED_TOOLS <= set(names), f"tools missing: {sorted(EXPECTED_TOOLS - set(names))}")
    extra_tools = sorted(set(names) - EXPECTED_TOOLS)
    tools_list_bytes = len(json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")))
    for t in listed.tools:
        check(t.output_schema is not None, f"{t.name}: no outputSchema")
        check(t.output_schema.get("type") == "object", f"{t.name}: outputSchema is not object-rooted")
        check(t.input_schema.get("type") == "object", f"{t.name}: inputSchema is not object-rooted")
        check(t.annotations is not None, f"{t.name}: no annotations")
        r.output_schemas[t.name] = t.output_schema
    # The SDK validates a tool's structured content only against output schemas it cached from a
    # listing; make sure that cache holds every tool's, i.e. the SDK's own validation is on.
    cached = getattr(c.session, "_tool_output_schemas", None)
    check(isinstance(cached, dict), "the SDK's output-schema cache is missing: cannot be sure it validates")
    check(all(cached.get(n) for n in names), f"the SDK did not cache every output schema: {sorted(k for k, v in cached.items() if v)}")

    run_id = r.run_id

    who = await r.call("whoami", {})
    masked = who["api_key"]
    check(isinstance(masked, str) and masked != "", "whoami: api_key is empty")
    visible = "".join(ch for ch in masked if ch.isalnum() or ch in "-_")
    check(len(visible) <= 4, f"whoami: api_key shows {len(visible)} characters ({masked!r}); at most 4 allowed")
    if r.api_key:
        check(r.api_key not in json.dumps(who), "whoami: the full key is in the result")
        check(r.api_key.endswith(visible), f"whoami: masked key {masked!r} is not a suffix of the key")
    check(bool(who["base_url"]), "whoami: base_url is empty")

    teams = await r.call("list_teams", {})
    check(len(teams["teams"]) >= 1, "list_teams: no teams")
    check(teams["total"] == len(teams["teams"]) or teams["total"] >= len(teams["teams"]), "list_teams: total smaller than the list")

    models = await r.call("list_models", {})
    check(len(models["models"]) >= 1, "list_models: no models")

    gpus = await r.call("list_gpus", {})
    check(len(gpus["gpus"]) >= 1, "list_gpus: no GPU types")
    check(all(g["gpu_type"] for g in gpus["gpus"]), "list_gpus: a GPU type without a name")

    runs = await r.call("list_runs", {"limit": 50})
    check(any(x["id"] == run_id for x in runs["runs"]), f"list_runs: run {run_id} is not listed")

    run = (await r.call("get_run", {"run_id": run_id}))["run"]
    check(run["id"] == run_id, f"get_run: id {run['id']!r} != {run_id!r}")
    check(run["status"] == "RUNNING", f"get_run: status {run['status']!r}, expected RUNNING")
    check(run["terminal"] is False, "get_run: a RUNNING run says terminal")

    comps = await r.call("get_components", {"run_id": run_id})
    check(comps["run_id"] == run_id, "get_components: wrong run id")
    check(len(comps["components"]) >= 1, "get_components: no components")

    logs = await r.call("get_logs", {"run_id": run_id, "tail": 50})
    check(logs["state"] == "ok", f"get_logs: state {logs['state']!r}")
    check(len(logs["lines"]) >= 1, "get_logs: no lines")
    check(logs["line_count"] == len(logs["lines"]), "get_logs: line_count differs from the lines")

    metrics = await r.call("get_metrics", {"run_id": run_id, "limit": 100})
    check(metrics["count"] >= 1 and len(metrics["metrics"]) == metrics["count"], f"get_metrics: count {metrics['count']}")
    check(all(isinstance(m, dict) and "step" in m for m in metrics["metrics"]), "get_metrics: a record without step")

    prog = await r.call("get_progress", {"run_id": run_id})
    check(isinstance(prog["latest_step"], int) and prog["latest_step"] >= 1, f"get_progress: latest_step {prog['latest_step']!r}")

    ckpts = await r.call("list_checkpoints", {"run_id": run_id})
    check(ckpts["run_id"] == run_id, "list_checkpoints: wrong run id")

    traces = await r.call("list_traces", {"run_id": run_id, "limit": 10})
    check(len(traces["traces"]) >= 1, "list_traces: no traces")

    fetched = await r.call("fetch_traces", {"run_id": run_id, "dest_dir": r.dest_dir})
    check(fetched["listed"] >= 1, "fetch_traces: nothing listed")
    check(fetched["downloaded"] + fetched["skipped"] == fetched["listed"], f"fetch_traces: {fetched['downloaded']} + {fetched['skipped']} != {fetched['listed']}")
    check(not fetched["not_downloaded"], f"fetch_traces: not downloaded: {fetched['not_downloaded'][:3]}")
    dest = Path(r.dest_dir)
    on_disk = sorted(p.name for p in dest.glob("*.json")) if dest.is_dir() else []
    check(len(on_disk) >= fetched["listed"], f"fetch_traces: {len(on_disk)} files in {dest}, {fetched['listed']} listed")
    # The answer names the manifest, not every file: one JSON line per trace fetched.
    manifest = Path(fetched["manifest"])
    entries = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    check(len(entries) >= fetched["listed"], f"fetch_traces: {len(entries)} manifest entries, {fetched['listed']} listed")
    for f in entries:
        p = dest / f["file"]
        check(p.is_file() and p.stat().st_size == f["bytes"], f"fetch_traces: {f['file']} missing or of another size")
        json.loads(p.read_bytes())

    check(set(r.called) == EXPECTED_TOOLS, f"not every tool was called: {sorted(EXPECTED_TOOLS - set(r.called))}")

    err = await r.call_error("get_run", {"run_id": UNKNOWN_RUN_ID})
    check(UNKNOWN_RUN_ID in err, f"get_run on an unknown id: the message does not name it: {err[:300]}")

    return {
        "protocol": proto,
        "tools": len(names),
        "extra_tools": extra_tools,
        "calls": len(r.called),
        "tools_list_bytes": tools_list_bytes,
        "run_status": run["status"],
        "latest_step": prog["latest_step"],
        "log_lines": len(logs["lines"]),
        "traces_fetched": fetched["listed"],
    }


def server_env() -> dict[str, str]:
    keep = ("PRIME_", "XDG_", "FACTORY_MCP_")
    return {k: v for k, v in os.environ.items() if k.startswith(keep) or k in ("RUST_LOG", "HOME")}


async def main(kind: str, target: str, mode: str, run_id: str, dest_dir: str) -> dict[str, Any]:
    if kind == "stdio":
        argv = json.loads(target) if target.lstrip().startswith("[") else shlex.split(target)
        check(isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv), "stdio target: empty command line")
        server: Any = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    elif kind == "http":
        # The server requires a bearer token (it created one in its state directory).
        token = os.environ.get("INTEROP_HTTP_TOKEN", "")
        check(bool(token), "http: INTEROP_HTTP_TOKEN is not set")
        headers = {"Authorization": f"Bearer {token}"}
        server = streamable_http_client(target, http_client=create_mcp_http_client(headers=headers))
    else:
        raise CheckFailed(f"transport must be stdio or http, not {kind!r}")
    if mode not in EXPECTED_PROTOCOL:
        raise CheckFailed(f"mode must be auto or legacy, not {mode!r}")
    api_key = os.environ.get("INTEROP_API_KEY") or os.environ.get("PRIME_API_KEY")
    async with Client(server, mode=mode, read_timeout_seconds=PER_REQUEST_TIMEOUT_S) as c:
        runner = Runner(c, run_id, dest_dir, api_key)
        return await exercise(runner, mode)


def first_leaf(e: BaseException) -> BaseException:
    """The first real exception inside (possibly nested) exception groups from the task groups."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = next((x for x in e.exceptions if isinstance(first_leaf(x), CheckFailed)), e.exceptions[0])
    return e


def entry() -> int:
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    kind, target, mode, run_id, dest_dir = sys.argv[1:]
    summary: dict[str, Any] = {"client": "python-mcp-2.3.0", "transport": kind, "mode": mode}
    try:
        summary |= asyncio.run(asyncio.wait_for(main(kind, target, mode, run_id, dest_dir), OVERALL_TIMEOUT_S))
        summary["ok"] = True
    except BaseException as e:  # noqa: BLE001 - anything else is a failure too, with its trace
        cause = first_leaf(e)
        if not isinstance(cause, CheckFailed):
            traceback.print_exception(e, file=sys.stderr)
        summary |= {"ok": False, "error": str(cause) if isinstance(cause, CheckFailed) else f"{type(cause).__name__}: {cause}"}
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(entry())
