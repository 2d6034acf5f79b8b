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

from typing import Annotated, Literal

from pydantic import Field

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("pingme")


@mcp.tool(
    name="PingME",
    title="Ping me",
    description="Checks that this MCP server is reachable: it answers with the single word BISMILLAH. "
    "Call it when the user asks to ping or test this server or the connection to it. Do not call it for "
    "anything else: it takes no input and returns no information.",
    structured_output=False,  # like the chapter: a text block, no outputSchema
)
def ping_me() -> str:
    return "BISMILLAH"


@mcp.tool(
    name="calculate_overtime",
    title="Calculate overtime pay",
    description="Calculates the gross pay for one day's work, overtime included. On a weekday the first "
    "8 hours are paid at the hourly rate and each further hour at 1.5 times the rate; every hour on a "
    "Saturday is paid at 1.5 times, on a Sunday at 2 times and on a public holiday at 2.5 times. Call it "
    "when the user asks what a day's work pays or how much of it is overtime. Do not call it for a whole "
    "week or month (call it once per day), for salaried staff, or for taxes and deductions: it computes "
    "gross pay only.",
    structured_output=False,
)
def calculate_overtime(
    hours: Annotated[float, Field(ge=0, le=24, description="Hours worked on that day, for example 10 or 7.5.")],
    rate: Annotated[
        float,
        Field(ge=0, description="The hourly base rate, in the user's currency, for example 20. "
              "The tool does not convert currencies."),
    ],
    dayType: Annotated[
        Literal["weekday", "saturday", "sunday", "holiday"],
        Field(description="The kind of day the hours were worked on. Use `holiday` for a public holiday, "
              "whatever day of the week it falls on."),
    ],
) -> str:
    # On a weekday the first 8 hours are regular; on other days every hour is overtime.
    regular_hours, multiplier, day = {
        "weekday": (min(hours, 8.0), 1.5, "weekday"),
        "saturday": (0.0, 1.5, "Saturday"),
        "sunday": (0.0, 2.0, "Sunday"),
        "holiday": (0.0, 2.5, "public holiday"),
    }[dayType]
    overtime_hours = hours - regular_hours
    regular_pay = cents(regular_hours * rate)
    overtime_pay = cents(overtime_hours * rate * multiplier)
    return (
        f"{hours:g} hours on a {day} at {rate:.2f} an hour: {regular_hours:g} regular hours pay {regular_pay:.2f}, "
        f"{overtime_hours:g} overtime hours at {multiplier:g} times the rate pay {overtime_pay:.2f}; "
        f"{cents(regular_pay + overtime_pay):.2f} in total."
    )


def cents(amount: float) -> float:
    """Round money to whole cents."""
    return round(amount * 100) / 100


# Stateless and JSON: every POST stands alone (any worker can answer it) and a
# one-shot result comes back as one JSON body, not an SSE stream.
app = mcp.streamable_http_app(stateless_http=True, json_response=True)
