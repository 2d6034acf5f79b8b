//! The workbook's two tools, PingME and calculate_overtime, written with the official
//! Rust SDK (`rmcp`), served over Streamable HTTP the way its documentation shows for
//! a production server: axum on tokio's multi-threaded runtime, stateless (no
//! `Mcp-Session-Id`), plain JSON responses (no SSE stream for a one-shot answer).
//!
//! `bench-rmcp-server [--bind ADDR]` (default 127.0.0.1:8080); it prints
//! `listening on http://ADDR/mcp` once it accepts connections, like the workbook's
//! servers. The tool definitions are copied from the workbook's chapter: same names,
//! same descriptions, same arguments, same answers.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};

#[derive(Debug, Clone)]
struct Tools {
    tool_router: ToolRouter<Self>,
}

/// calculate_overtime's arguments, as the chapter's `inputSchema` describes them.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OvertimeArguments {
    /// Hours worked on that day, for example 10 or 7.5.
    #[schemars(range(min = 0, max = 24))]
    hours: f64,
    /// The hourly base rate, in the user's currency, for example 20. The tool does not convert currencies.
    #[schemars(range(min = 0))]
    rate: f64,
    /// The kind of day the hours were worked on. Use `holiday` for a public holiday, whatever day of the week it falls on.
    day_type: DayType,
}

#[derive(Debug, Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum DayType {
    Weekday,
    Saturday,
    Sunday,
    Holiday,
}

#[tool_router]
impl Tools {
    fn new() -> Tools {
        Tools { tool_router: Self::tool_router() }
    }

    #[tool(
        name = "PingME",
        title = "Ping me",
        description = "Checks that this MCP server is reachable: it answers with the single word BISMILLAH. \
            Call it when the user asks to ping or test this server or the connection to it. Do not call it for \
            anything else: it takes no input and returns no information."
    )]
    fn ping_me(&self) -> String {
        "BISMILLAH".to_string()
    }

    #[tool(
        name = "calculate_overtime",
        title = "Calculate overtime pay",
        description = "Calculates the gross pay for one day's work, overtime included. On a weekday the first \
            8 hours are paid at the hourly rate and each further hour at 1.5 times the rate; every hour on a \
            Saturday is paid at 1.5 times, on a Sunday at 2 times and on a public holiday at 2.5 times. Call it \
            when the user asks what a day's work pays or how much of it is overtime. Do not call it for a whole \
            week or month (call it once per day), for salaried staff, or for taxes and deductions: it computes \
            gross pay only."
    )]
    fn calculate_overtime(&self, Parameters(arguments): Parameters<OvertimeArguments>) -> String {
        let OvertimeArguments { hours, rate, day_type } = arguments;
        // On a weekday the first 8 hours are regular; on other days every hour is overtime.
        let (regular_hours, multiplier, day) = match day_type {
            DayType::Weekday => (hours.min(8.0), 1.5, "weekday"),
            DayType::Saturday => (0.0, 1.5, "Saturday"),
            DayType::Sunday => (0.0, 2.0, "Sunday"),
            DayType::Holiday => (0.0, 2.5, "public holiday"),
        };
        let overtime_hours = hours - regular_hours;
        let regular_pay = cents(regular_hours * rate);
        let overtime_pay = cents(overtime_hours * rate * multiplier);
        format!(
            "{hours} hours on a {day} at {rate:.2} an hour: {regular_hours} regular hours pay {regular_pay:.2}, \
             {overtime_hours} overtime hours at {multiplier} times the rate pay {overtime_pay:.2}; {:.2} in total.",
            cents(regular_pay + overtime_pay)
        )
    }
}

/// Round money to whole cents.
fn cents(amount: f64) -> f64 {
    (amount * 100.0).round() / 100.0
}

// `router = self.tool_router`: use the router built once, not a new one per call
// (the macro's default builds it again on every call).
#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut bind = "127.0.0.1:8080".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--bind", Some(value)) => bind = value,
            _ => {
                eprintln!("usage: bench-rmcp-server [--bind ADDR]");
                std::process::exit(2);
            }
        }
    }

    // Stateless, JSON responses: the SDK's settings for a server behind a load
    // balancer, and the same wire behaviour as the workbook's starter.
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true);
    // The service asks for a handler per request; hand out clones of one built once.
    let tools = Tools::new();
    let service =
        StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(NeverSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", service);

    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router).await
}
