"""The FastMCP baseline: a minimal FastMCP 4.x server with one tool equivalent to our `get_run`.

Every existing Prime MCP server is a FastMCP server whose tools forward to the platform with an
async HTTP client; this is that stack at its smallest (one pooled client, one GET, the JSON
returned as the structured result). The benchmark starts it over stdio exactly as it starts
`factory-mcp serve`, with the same environment (PRIME_API_BASE_URL, PRIME_API_KEY).
"""

import os

import httpx2 as httpx  # fastmcp 4.x depends on httpx2, httpx's successor with the same API
from fastmcp import FastMCP

BASE = os.environ["PRIME_API_BASE_URL"].rstrip("/") + "/api/v1"
KEY = os.environ["PRIME_API_KEY"]

mcp = FastMCP("fastmcp-baseline")
_client: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(
            base_url=BASE, headers={"Authorization": f"Bearer {KEY}"}, timeout=30.0
        )
    return _client


@mcp.tool(annotations={"readOnlyHint": True})
async def get_run(run_id: str) -> dict:
    """Get one training run by id."""
    r = await client().get(f"/rft/runs/{run_id}")
    r.raise_for_status()
    return r.json()


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
