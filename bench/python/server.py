"""The workbook's two tools, PingME and calculate_overtime, written with the official
Python SDK (`mcp` 2.x), for the benchmark.

Served the way the SDK's README recommends for production Streamable HTTP
(stateless, JSON responses) under uvicorn, whose deployment guide recommends
`uvicorn[standard]` (uvloop event loop, httptools parser), one worker process per
core, and no access log:

    uvicorn server:app --host 127.0.0.1 --port 8080 --workers N \
        --loop uvloop --http httptools --no-access-log --log-level warning

The tool definitions are copied from the workbook's chapter: same names, same
descriptions, same arguments, same answers.
"""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("pingme")


@mcp.tool(name="PingME", description="Answers the magic word. Call it to check the server is reachable.")
def ping_me() -> str:
    return "BISMILLAH"


@mcp.tool(
    name="calculate_overtime",
    description="Overtime pay for a week: hours over 40 at 1.5 times the hourly rate.",
)
def calculate_overtime(hours_worked: float, hourly_rate: float) -> str:
    overtime = max(hours_worked - 40.0, 0.0)
    return f"{overtime * hourly_rate * 1.5:.2f}"


# Stateless and JSON: every POST stands alone (any worker can answer it) and a
# one-shot result comes back as one JSON body, not an SSE stream.
app = mcp.streamable_http_app(stateless_http=True, json_response=True)
