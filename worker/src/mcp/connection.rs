//! One MCP server's connection: started at first use, its tool list
//! cached until the server sends `notifications/tools/list_changed` (or
//! is restarted), every request under a timeout. A server that cannot
//! start, or whose connection ends, is marked down; the next use starts
//! it again, at once after a first failure and after a growing backoff
//! when it keeps failing, so a broken server costs each call little.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::handler::client::ClientHandler;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

use super::endpoint::{Endpoint, INHERITED_ENV, Transport};
use super::error::McpError;

/// The longest wait between attempts to start a server that keeps
/// failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A server's connection and cached tools.
pub struct Connection {
    endpoint: Endpoint,
    state: tokio::sync::Mutex<State>,
    /// The last listing; kept while the server is down, so its tools stay
    /// offered and calls say why they fail.
    listed: Mutex<Option<Arc<Vec<Tool>>>>,
    /// Set when the listing must be fetched again.
    stale: Arc<AtomicBool>,
}

#[derive(Default)]
struct State {
    service: Option<RunningService<RoleClient, Handler>>,
    /// Failures since the last successful start.
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
}

/// Marks the listing stale when the server says its tools changed.
#[derive(Clone)]
struct Handler {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::SeqCst);
    }
}

impl Connection {
    /// A connection to `endpoint`, not started yet.
    pub fn new(endpoint: Endpoint) -> Self {
        Connection {
            endpoint,
            state: tokio::sync::Mutex::default(),
            listed: Mutex::default(),
            stale: Arc::new(AtomicBool::new(true)),
        }
    }

    /// The server's tools: the cached listing while it is fresh, else a
    /// new one (starting the server when it is not running). While the
    /// server is down, the last listing, if there was one.
    pub async fn tools(&self) -> Result<Arc<Vec<Tool>>, McpError> {
        if let Some(tools) = self.cached().filter(|_| !self.stale.load(Ordering::SeqCst)) {
            return Ok(tools);
        }
        match self.list().await {
            Ok(tools) => Ok(tools),
            Err(error) => self.cached().ok_or(error),
        }
    }

    /// The last listing, without touching the server.
    pub fn cached(&self) -> Option<Arc<Vec<Tool>>> {
        self.listed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    async fn list(&self) -> Result<Arc<Vec<Tool>>, McpError> {
        let peer = self.peer().await?;
        // Cleared before the request, so a change announced while it runs
        // is fetched next time.
        self.stale.store(false, Ordering::SeqCst);
        let listed = tokio::time::timeout(self.endpoint.timeout, peer.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => Arc::new(tools),
            Ok(Err(error)) => {
                self.stale.store(true, Ordering::SeqCst);
                return Err(self.failed_request(error).await);
            }
            Err(_) => {
                self.stale.store(true, Ordering::SeqCst);
                return Err(McpError::Timeout(self.endpoint.timeout));
            }
        };
        *self.listed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&tools));
        Ok(tools)
    }

    /// Calls the server's tool `name` with `arguments`, under the
    /// server's timeout; dropping the request on timeout cancels it on
    /// the server.
    pub async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, McpError> {
        let peer = self.peer().await?;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        match tokio::time::timeout(self.endpoint.timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(self.failed_request(error).await),
            Err(_) => Err(McpError::Timeout(self.endpoint.timeout)),
        }
    }

    /// The running server's peer, starting the server when it is not
    /// running and its backoff allows.
    async fn peer(&self) -> Result<Peer<RoleClient>, McpError> {
        let mut state = self.state.lock().await;
        if let Some(service) = &state.service {
            if !service.is_closed() {
                return Ok(service.peer().clone());
            }
            state.service = None;
            record_failure(&mut state, "the connection had closed".to_owned());
        }
        if let Some(at) = state.retry_at
            && let Some(retry_in) = at.checked_duration_since(Instant::now())
        {
            return Err(McpError::Down {
                last: state.last_error.clone().unwrap_or_default(),
                retry_in,
            });
        }
        let handler = Handler {
            stale: Arc::clone(&self.stale),
        };
        let started = tokio::time::timeout(
            self.endpoint.startup_timeout,
            start(&self.endpoint, handler),
        )
        .await
        .unwrap_or(Err(McpError::StartupTimeout(self.endpoint.startup_timeout)));
        match started {
            Ok(service) => {
                let peer = service.peer().clone();
                *state = State {
                    service: Some(service),
                    ..State::default()
                };
                // A new process may offer other tools.
                self.stale.store(true, Ordering::SeqCst);
                tracing::info!(server = %self.endpoint.server, "MCP server started");
                Ok(peer)
            }
            Err(error) => {
                tracing::warn!(server = %self.endpoint.server, %error, "MCP server failed to start");
                record_failure(&mut state, error.to_string());
                Err(error)
            }
        }
    }

    /// Classifies a failed request; one that ended the connection marks
    /// the server down, so the next use restarts it.
    async fn failed_request(&self, error: ServiceError) -> McpError {
        match error {
            ServiceError::McpError(e) => McpError::Refused(e.message.to_string()),
            ServiceError::TransportClosed
            | ServiceError::TransportSend(_)
            | ServiceError::Cancelled { .. } => {
                let reason = error.to_string();
                let mut state = self.state.lock().await;
                if let Some(mut service) = state.service.take() {
                    let _ = service.close().await;
                }
                record_failure(&mut state, reason.clone());
                tracing::warn!(server = %self.endpoint.server, %reason, "MCP server stopped");
                McpError::Died(reason)
            }
            ServiceError::Timeout { timeout } => McpError::Timeout(timeout),
            other => McpError::Refused(other.to_string()),
        }
    }
}

/// Counts a failure and sets when the server may be tried again: at once
/// after the first, then after 1, 2, 4 ... seconds, at most
/// [`MAX_BACKOFF`].
fn record_failure(state: &mut State, error: String) {
    state.failures += 1;
    state.retry_at = Some(Instant::now() + backoff(state.failures));
    state.last_error = Some(error);
}

fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(5)).min(MAX_BACKOFF),
    }
}

async fn start(
    endpoint: &Endpoint,
    handler: Handler,
) -> Result<RunningService<RoleClient, Handler>, McpError> {
    let handshake = |e: rmcp::service::ClientInitializeError| McpError::Handshake(e.to_string());
    match &endpoint.transport {
        Transport::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear();
            for name in INHERITED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    cmd.env(name, value);
                }
            }
            cmd.envs(env.iter().map(|(k, v)| (k, v)));
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| McpError::Spawn(format!("`{command}`: {e}")))?;
            if let Some(stderr) = stderr {
                log_stderr(endpoint.server.clone(), stderr);
            }
            handler.serve(transport).await.map_err(handshake)
        }
        Transport::Http { url, headers } => {
            let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                .custom_headers(header_map(headers)?);
            let transport = StreamableHttpClientTransport::with_client(http_client()?, config);
            handler.serve(transport).await.map_err(handshake)
        }
    }
}

/// The server's stderr, line by line, at debug level: diagnostics for
/// operators, never shown to the model.
fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(%server, "{line}");
        }
    });
}

fn header_map(
    headers: &[(String, String)],
) -> Result<
    std::collections::HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
    McpError,
> {
    headers
        .iter()
        .map(|(name, value)| {
            let key = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| McpError::Config(format!("`{name}` is no valid header name")))?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                McpError::Config(format!(
                    "the value of header `{name}` is not valid in a header"
                ))
            })?;
            value.set_sensitive(true);
            Ok((key, value))
        })
        .collect()
}

/// A client for streamable HTTP servers; refuses instead of panicking
/// when the process installed no rustls crypto provider.
fn http_client() -> Result<reqwest::Client, McpError> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        return Err(McpError::Config(
            "the worker has no TLS crypto provider installed".to_owned(),
        ));
    }
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| McpError::Config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_retries_at_once_then_grows_to_a_cap() {
        let waits: Vec<u64> = (1..=9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [0, 1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[tokio::test]
    async fn a_program_that_is_not_there_is_an_error_then_a_backoff() {
        let endpoint = Endpoint {
            server: "broken".into(),
            transport: Transport::Stdio {
                command: "/nonexistent/deepfleet-mcp-server".into(),
                args: Vec::new(),
                env: Vec::new(),
            },
            timeout: Duration::from_secs(5),
            startup_timeout: Duration::from_secs(5),
        };
        let connection = Connection::new(endpoint);
        let first = connection.tools().await.unwrap_err();
        assert!(
            matches!(&first, McpError::Spawn(m) if m.contains("/nonexistent")),
            "{first}"
        );
        // The first failure is retried at once, the second waits.
        assert!(matches!(
            connection.call("x", JsonObject::new()).await,
            Err(McpError::Spawn(_))
        ));
        let third = connection.call("x", JsonObject::new()).await.unwrap_err();
        assert!(
            matches!(&third, McpError::Down { last, .. } if last.contains("/nonexistent")),
            "{third}"
        );
    }
}
