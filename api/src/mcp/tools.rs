//! The MCP tools `/mcp` offers: one per assistant of the caller's tenant
//! (the system assistants of the served graphs, then the tenant's own,
//! oldest first), named after the assistant, described by it, taking its
//! graph's input or a plain `input` string. A call runs the assistant
//! statelessly (on a temporary thread, through every check a run request
//! passes), at most [`CALL_LIMIT`], and answers its final message.
//!
//! Nothing is kept between requests: the list is made again for each, so
//! any scheduler replica answers any call, and a tool is always the
//! caller's tenant's.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use deepfleet_proto::api::{Assistant, RunCreateParams};
use deepfleet_proto::keys::records::tenant_assistants;
use deepfleet_proto::{AgentSpec, RunStatus, TenantId};
use deepfleet_store::Order;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Value, json};
use tracing::warn;

use crate::a2a::card::about;
use crate::assistants::graph::schemas_of;
use crate::error::ApiError;
use crate::state::ApiState;
use deepfleet_scheduler::lifecycle::status::api_status;
use deepfleet_scheduler::repo::assistants::assistants;
use deepfleet_scheduler::runs::assistants::system;
use deepfleet_scheduler::runs::create::create_run;
use deepfleet_scheduler::runs::follow::ended_within;

/// How long a tool call may run before it is cancelled and answered as a
/// failure.
pub const CALL_LIMIT: Duration = Duration::from_secs(600);
/// The longest tool name: what the strictest model APIs accept.
pub const MAX_NAME: usize = 64;
/// The most tools listed: a tenant's assistants past it (oldest first)
/// are not offered, which bounds what one listing reads.
pub const MAX_TOOLS: usize = 500;

/// An assistant offered as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantTool {
    /// The tool's name, unique in the list.
    pub name: String,
    /// The assistant it runs.
    pub assistant: Assistant,
}

/// What a tool is called after: the assistant's name, or its graph's
/// when the name says nothing (`Untitled`, the default, or empty).
pub fn label(assistant: &Assistant) -> &str {
    let name = assistant.name.trim();
    if name.is_empty() || name == "Untitled" {
        &assistant.graph_id
    } else {
        name
    }
}

/// `label` as a tool name: letters, digits, `_` and `-` kept, anything
/// else `_`, cut to [`MAX_NAME`]; never empty.
pub fn tool_name(label: &str) -> String {
    let name: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    if name.is_empty() {
        "assistant".into()
    } else {
        name
    }
}

/// Tool names for `labels`, in order, each unique: a name taken already
/// gets `_2`, `_3`, ... (its stem cut so the whole fits [`MAX_NAME`]).
pub fn unique_names<'a>(labels: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = HashSet::new();
    let mut names = Vec::new();
    for label in labels {
        let base = tool_name(label);
        let mut name = base.clone();
        let mut n = 2;
        while taken.contains(&name) {
            let suffix = format!("_{n}");
            let stem: String = base.chars().take(MAX_NAME - suffix.len()).collect();
            name = format!("{stem}{suffix}");
            n += 1;
        }
        taken.insert(name.clone());
        names.push(name);
    }
    names
}

/// `tenant`'s assistants as tools, at most [`MAX_TOOLS`].
pub async fn tools_of(state: &ApiState, tenant: &TenantId) -> Result<Vec<AssistantTool>, ApiError> {
    let mut offered: Vec<Assistant> = state
        .runs
        .graphs
        .names()
        .iter()
        .map(|graph| system(&state.runs, graph))
        .collect();
    let repo = assistants(state.store());
    let mut walk = repo
        .walk(tenant_assistants(tenant.as_str()), Order::Ascending)
        .chunk(MAX_TOOLS);
    while offered.len() < MAX_TOOLS {
        let Some(record) = walk.next().await? else {
            break;
        };
        if record.tenant == *tenant {
            offered.push(record.assistant);
        }
    }
    offered.truncate(MAX_TOOLS);
    let names = unique_names(offered.iter().map(label));
    Ok(names
        .into_iter()
        .zip(offered)
        .map(|(name, assistant)| AssistantTool { name, assistant })
        .collect())
}

/// The MCP descriptions of `tools`: what each assistant does and what it
/// takes (its graph's input, or an `input` string). Each graph's spec is
/// read once.
pub async fn describe(state: &ApiState, tools: &[AssistantTool]) -> Result<Vec<Tool>, ApiError> {
    let mut specs: HashMap<&str, AgentSpec> = HashMap::new();
    let mut described = Vec::with_capacity(tools.len());
    for tool in tools {
        let graph = tool.assistant.graph_id.as_str();
        if !specs.contains_key(graph) {
            let spec = state.runs.life.intake().spec_for(graph).await?.spec;
            specs.insert(graph, spec);
        }
        let Some(spec) = specs.get(graph) else {
            continue;
        };
        let graph_input = schemas_of(graph.to_owned(), spec).input_schema;
        described.push(Tool::new(
            tool.name.clone(),
            about(&tool.assistant, spec),
            input_schema(graph_input.as_ref()),
        ));
    }
    Ok(described)
}

/// A tool's input schema: an `input` string (the user's message), or the
/// graph's input (`messages`, `files`), whose properties it takes.
pub fn input_schema(graph_input: Option<&Value>) -> JsonObject {
    let mut properties = graph_input
        .and_then(|schema| schema.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    properties.insert(
        "input".into(),
        json!({"type": "string", "description": "The message to send the assistant \
               (or give `messages`)."}),
    );
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    schema
}

/// The run input of a call's arguments: `input` as one user message, or
/// the graph input given (`messages`, with `files` if any).
pub fn run_input(arguments: Option<&JsonObject>) -> Result<Value, String> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    match (arguments.get("input"), arguments.get("messages")) {
        (Some(Value::String(text)), None) if !text.trim().is_empty() => {
            Ok(json!({"messages": [{"role": "user", "content": text}]}))
        }
        (None, Some(Value::Array(_))) => Ok(Value::Object(arguments.clone())),
        (Some(_), Some(_)) => Err("give either `input` or `messages`, not both".into()),
        _ => Err("give `input` (a non-empty string) or `messages` (a list of messages)".into()),
    }
}

/// Runs `tool` statelessly with `input` as `tenant`, at most [`CALL_LIMIT`]
/// (or until `cancelled`), and answers its final message; a refused
/// request, a failed, interrupted or cancelled run, or one out of time is
/// a tool error saying so (one out of time, or whose caller went away, is
/// cancelled first).
pub async fn call(
    state: &ApiState,
    tenant: &TenantId,
    tool: &AssistantTool,
    input: Value,
    cancelled: impl Future<Output = ()>,
) -> Result<CallToolResult, ApiError> {
    let body: RunCreateParams = serde_json::from_value(json!({
        "assistant_id": tool.assistant.assistant_id,
        "input": input,
        "metadata": {"mcp_tool": tool.name},
    }))
    .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let mut meta = match create_run(&state.runs, tenant, None, &body, None).await {
        Ok(meta) => meta,
        Err(e) if !e.is_backend() => return Ok(failure(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    let ended = tokio::select! {
        ended = ended_within(&state.runs, &meta, CALL_LIMIT) => ended?,
        () = cancelled => false,
    };
    let record = state.runs.life.run_record(&meta).await?;
    let answer = match record {
        _ if !ended => {
            state.runs.life.cancel(&mut meta).await?;
            failure(format!(
                "the assistant did not answer within {} s; its run was cancelled",
                CALL_LIMIT.as_secs()
            ))
        }
        Some(run) if run.status == RunStatus::Success => {
            CallToolResult::success(vec![ContentBlock::text(run.output.unwrap_or_default())])
        }
        // Nobody can answer its question over MCP; its temporary thread
        // expires with it.
        Some(run) if run.status == RunStatus::AwaitingHuman => failure(
            "the assistant asked for a human decision on a tool call, which a tool call \
             cannot give"
                .into(),
        ),
        Some(run) => failure(match run.error {
            Some(e) => format!("the run failed ({}): {}", e.code.as_str(), e.message),
            None => format!("the run ended {}", api_status(run.status).as_str()),
        }),
        None => failure("the run was cancelled before it started".into()),
    };
    if let Err(e) = state.runs.life.dispose_temporary(&meta).await {
        warn!(error = %e, run_id = %meta.run_id, "removing an MCP call's thread");
    }
    Ok(answer)
}

/// A tool error the caller reads.
fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[cfg(test)]
#[path = "mcp_tools_tests.rs"]
mod tests;
