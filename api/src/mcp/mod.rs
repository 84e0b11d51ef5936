//! `POST /mcp` (and `/mcp/`): the assistants as MCP tools, over the Model
//! Context Protocol's streamable HTTP transport (the Agent Server's MCP
//! endpoint), served by `rmcp`. The tools and their calls are
//! [`crate::mcp::tools`].
//!
//! The transport is stateless: no session is made, each POST is served
//! by itself, so any scheduler replica answers any request and nothing
//! is lost when one goes. Answers are event streams rather than plain
//! JSON: a tool call lasts as long as its run, and a stream's head goes
//! out at once (a JSON answer's head would wait for the run, past the
//! API's head timeout), with keep-alives meanwhile. The caller's key
//! scopes the tools: `auth` puts the [`Caller`] on the request, and
//! `rmcp` hands the request's parts to the handler.

pub mod tools;

use std::sync::Arc;

use axum::Extension;
use axum::body::{Body as HttpBody, to_bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::{Caller, Role, TenantId};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

use crate::error::ApiError;
use crate::mcp::tools::{call, describe, run_input, tools_of};
use crate::routes::{READ, Routes, require};
use crate::state::ApiState;
use deepfleet_scheduler::runs::follow::KEEP_ALIVE;

const JSON: &str = "application/json";
const EVENTS: &str = "text/event-stream";
const BOTH: &str = "application/json, text/event-stream";
/// The most of a transport refusal's text kept.
const REFUSAL_BYTES: usize = 4096;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .post("/mcp", READ, serve)
        .post("/mcp/", READ, serve)
}

async fn serve(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    request: Request,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    check_media_types(&mut parts.headers)?;
    // Read here (bounded as the transport bounds it) to check each
    // method's role before the transport acts on any of them.
    let body = to_bytes(body, state.max_body_bytes).await.map_err(|_| {
        ApiError::too_large(format!(
            "The body is over the limit of {} bytes.",
            state.max_body_bytes
        ))
    })?;
    for method in rpc_methods(&body) {
        require(&caller, needs(&method))?;
    }
    let request = Request::from_parts(parts, HttpBody::from(body));
    let response = service(state).handle(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(JSON));
    if !status.is_client_error() || is_json {
        return Ok(response.into_response());
    }
    // The transport refuses in plain text (a body that is no JSON-RPC
    // message, an unknown protocol version): said as every route says it.
    let text = to_bytes(HttpBody::new(response.into_body()), REFUSAL_BYTES)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    Err(ApiError::client(status, text))
}

/// The role an MCP method needs: calling a tool runs an assistant, a
/// write; the handshake, listings and notifications are reads.
fn needs(method: &str) -> Role {
    match method {
        "tools/call" => Role::Submit,
        _ => Role::Read,
    }
}

/// The methods a JSON-RPC body names: one message's, or each of a
/// batch's. A body that is not JSON-RPC names none; the transport
/// refuses it.
fn rpc_methods(body: &[u8]) -> Vec<String> {
    let method = |message: &Value| message.get("method")?.as_str().map(str::to_owned);
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(messages)) => messages.iter().filter_map(method).collect(),
        Ok(message) => method(&message).into_iter().collect(),
        Err(_) => Vec::new(),
    }
}

/// Refuses, as every route does (a `detail` body), a body that is not
/// JSON or a client that takes neither JSON nor events, before the
/// transport sees them. A client that takes anything (`*/*`, or no
/// `Accept`) is given what the transport requires it to say: both.
fn check_media_types(headers: &mut HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(JSON));
    if !is_json {
        return Err(ApiError::unsupported_media_type(
            "An MCP request is JSON: Content-Type: application/json.",
        ));
    }
    let accepted: Vec<String> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .collect();
    let takes = |media: &str| accepted.iter().any(|a| a == media);
    if accepted.is_empty() || takes("*/*") {
        headers.insert(header::ACCEPT, HeaderValue::from_static(BOTH));
        return Ok(());
    }
    if !(takes(JSON) && takes(EVENTS)) {
        return Err(ApiError::not_acceptable(format!(
            "An MCP client accepts both {JSON} and {EVENTS}."
        )));
    }
    Ok(())
}

/// The transport for one request: stateless, streaming, and answering
/// any `Host` (the API behind it checks keys, as every route does; a
/// deployment names its hosts at its ingress).
fn service(state: ApiState) -> StreamableHttpService<AssistantTools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(false)
        .with_sse_keep_alive(Some(KEEP_ALIVE))
        .with_max_request_body_bytes(state.max_body_bytes)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || {
            Ok(AssistantTools {
                state: state.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// The MCP server: the caller's assistants as tools.
#[derive(Clone)]
pub struct AssistantTools {
    state: ApiState,
}

impl ServerHandler for AssistantTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("deepfleet", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool runs one of your assistants (a deep agent) on your message, \
                 to its end, and answers with its final message.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tenant = tenant_of(&context)?;
        let tools = tools_of(&self.state, &tenant).await.map_err(mcp_error)?;
        let described = describe(&self.state, &tools).await.map_err(mcp_error)?;
        Ok(ListToolsResult::with_all_items(described))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tenant = tenant_of(&context)?;
        let tools = tools_of(&self.state, &tenant).await.map_err(mcp_error)?;
        let Some(tool) = tools.iter().find(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool '{}'.", request.name),
                None,
            ));
        };
        let input = match run_input(request.arguments.as_ref()) {
            Ok(input) => input,
            Err(why) => return Ok(CallToolResult::error(vec![ContentBlock::text(why)]).into()),
        };
        let answer = call(&self.state, &tenant, tool, input, context.ct.cancelled())
            .await
            .map_err(mcp_error)?;
        Ok(answer.into())
    }
}

/// The tenant of the key the request presented: `auth` put its
/// [`Caller`] on the request, whose parts `rmcp` passes on.
fn tenant_of(context: &RequestContext<RoleServer>) -> Result<TenantId, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .map(|caller| caller.tenant.clone())
        .ok_or_else(|| ErrorData::internal_error("the request carries no caller", None))
}

/// An API refusal as an MCP error: the caller's mistakes are invalid
/// params, the server's internal.
fn mcp_error(e: ApiError) -> ErrorData {
    if e.status.is_client_error() {
        ErrorData::invalid_params(e.detail, None)
    } else {
        ErrorData::internal_error(e.detail, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: &str, accept: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).unwrap(),
        );
        if let Some(accept) = accept {
            headers.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        }
        headers
    }

    #[test]
    fn a_request_is_json_from_a_client_that_takes_json_and_events() {
        let mut fine = headers("application/json; charset=utf-8", Some(BOTH));
        assert!(check_media_types(&mut fine).is_ok());
        let mut text = headers("text/plain", Some(BOTH));
        assert_eq!(
            check_media_types(&mut text).unwrap_err().status.as_u16(),
            415
        );
        let mut json_only = headers(JSON, Some(JSON));
        assert_eq!(
            check_media_types(&mut json_only)
                .unwrap_err()
                .status
                .as_u16(),
            406
        );
    }

    #[test]
    fn a_client_that_takes_anything_is_given_both() {
        for accept in [None, Some("*/*")] {
            let mut headers = headers(JSON, accept);
            assert!(check_media_types(&mut headers).is_ok());
            assert_eq!(headers[header::ACCEPT], BOTH);
        }
    }
}
