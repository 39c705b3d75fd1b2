"""Checks factory-mcp's resources and prompts through the official Python MCP SDK (mcp==2.3.0).

usage: python py_resources.py auto|legacy RUN_ID -- SERVER_ARGV...

The server is spawned over stdio with this process's PRIME_*, XDG_* and FACTORY_MCP_* variables
and HOME. RUN_ID names a RUNNING run with a few steps done. Prints one JSON line (the summary) as
its last line; exits non-zero on any failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from typing import Any

from mcp import Client, StdioServerParameters
import mcp.types as types

EXPECTED_PROTOCOL = {"auto": "2026-07-28", "legacy": "2025-11-25"}
TEMPLATES = ["factory://runs/{run_id}", "factory://runs/{run_id}/logs"]
PROMPTS = {"smoke_run", "diagnose_failed_run"}


class CheckFailed(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def texts(result: types.ReadResourceResult) -> list[str]:
    return [c.text for c in result.contents if isinstance(c, types.TextResourceContents)]


async def exercise(c: Client, mode: str, run_id: str) -> dict[str, Any]:
    check(c.protocol_version == EXPECTED_PROTOCOL[mode], f"negotiated {c.protocol_version!r} in mode {mode}")
    caps = c.server_capabilities
    check(caps is not None and caps.resources is not None, "the server does not advertise resources")
    check(caps.prompts is not None, "the server does not advertise prompts")

    templates = await c.list_resource_templates()
    uris = [t.uri_template for t in templates.resource_templates]
    check(uris == TEMPLATES, f"resource templates: {uris}")
    check(all(t.mime_type for t in templates.resource_templates), "a template has no MIME type")

    run = await c.read_resource(f"factory://runs/{run_id}")
    body = texts(run)
    check(len(body) == 1, f"run resource: {len(body)} text contents")
    status = json.loads(body[0])
    check(status.get("id") == run_id, f"run resource names another run: {status.get('id')}")
    check(status.get("status") == "RUNNING", f"run resource status: {status.get('status')}")

    logs = await c.read_resource(f"factory://runs/{run_id}/logs")
    log_text = "\n".join(texts(logs))
    check("Step" in log_text, f"logs resource has no step lines: {log_text[:300]}")
    check(len(log_text.encode()) <= 32 * 1024, "logs resource is not bounded")

    missing_error = ""
    try:
        await c.read_resource("factory://runs/interop-no-such-run-0000")
        raise CheckFailed("reading an unknown run's resource succeeded")
    except CheckFailed:
        raise
    except Exception as e:  # the SDK raises an MCP error for the JSON-RPC error
        missing_error = str(e)
    check("not found" in missing_error.lower(), f"unknown run resource: {missing_error[:200]}")

    prompts = await c.list_prompts()
    names = {p.name for p in prompts.prompts}
    check(names == PROMPTS, f"prompts: {sorted(names)}")
    smoke = next(p for p in prompts.prompts if p.name == "smoke_run")
    required = {a.name for a in (smoke.arguments or []) if a.required}
    check(required == {"config_path"}, f"smoke_run required arguments: {required}")

    got = await c.get_prompt("smoke_run", {"config_path": "configs/rl.toml", "max_steps": "3"})
    text = " ".join(m.content.text for m in got.messages if isinstance(m.content, types.TextContent))
    for word in ("validate_config", "plan_run", "launch_run", "watch_run", "configs/rl.toml", "max_steps = 3"):
        check(word in text, f"smoke_run prompt lacks {word!r}")
    got = await c.get_prompt("diagnose_failed_run", {"run_id": run_id})
    text = " ".join(m.content.text for m in got.messages if isinstance(m.content, types.TextContent))
    check(run_id in text and "diagnose_run" in text, "diagnose_failed_run prompt lacks the run or the tool")

    return {"protocol": c.protocol_version, "templates": len(uris), "prompts": len(names), "log_bytes": len(log_text.encode())}


def server_env() -> dict[str, str]:
    keep = ("PRIME_", "XDG_", "FACTORY_MCP_")
    return {k: v for k, v in os.environ.items() if k.startswith(keep) or k in ("RUST_LOG", "HOME")}


async def main(mode: str, run_id: str, argv: list[str]) -> dict[str, Any]:
    server = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env())
    async with Client(server, mode=mode, read_timeout_seconds=60.0) as c:
        return await exercise(c, mode, run_id)


def entry() -> int:
    if len(sys.argv) < 5 or sys.argv[3] != "--" or sys.argv[1] not in EXPECTED_PROTOCOL:
        print(__doc__, file=sys.stderr)
        return 2
    mode, run_id, argv = sys.argv[1], sys.argv[2], sys.argv[4:]
    summary: dict[str, Any] = {"client": "python-mcp-2.3.0", "mode": mode}
    try:
        summary |= asyncio.run(asyncio.wait_for(main(mode, run_id, argv), 120))
        summary["ok"] = True
    except BaseException as e:  # noqa: BLE001
        cause = e
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
            cause = cause.exceptions[0]
        if not isinstance(cause, CheckFailed):
            traceback.print_exception(e, file=sys.stderr)
        summary |= {"ok": False, "error": str(cause)}
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(entry())
