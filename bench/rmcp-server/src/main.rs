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

/// The arguments of calculate_overtime.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct OvertimeArgs {
    /// Hours worked in the week.
    hours_worked: f64,
    /// Pay per regular hour.
    hourly_rate: f64,
}

#[tool_router]
impl Tools {
    fn new() -> Tools {
        Tools { tool_router: Self::tool_router() }
    }

    #[tool(name = "PingME", description = "Answers the magic word. Call it to check the server is reachable.")]
    fn ping_me(&self) -> String {
        "BISMILLAH".to_string()
    }

    #[tool(name = "calculate_overtime", description = "Overtime pay for a week: hours over 40 at 1.5 times the hourly rate.")]
    fn calculate_overtime(&self, Parameters(args): Parameters<OvertimeArgs>) -> String {
        let overtime = (args.hours_worked - 40.0).max(0.0);
        format!("{:.2}", overtime * args.hourly_rate * 1.5)
    }
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
    let service = StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(NeverSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", service);

    let listener = tokio::net::TcpListener::bind(&bind).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router).await
}
