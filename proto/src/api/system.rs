//! `/ok` and `/info`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /ok`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OkResponse {
    /// Always true: the server answers.
    pub ok: bool,
}

/// `GET /info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InfoResponse {
    /// The server's version.
    pub version: String,
    /// The reference server's Python version; none here.
    pub langgraph_py_version: Option<String>,
    /// Which optional features the server has.
    pub flags: InfoFlags,
    /// What is served.
    pub metadata: InfoMetadata,
}

/// The features `/info` advertises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InfoFlags {
    /// Assistants can be created.
    pub assistants: bool,
    /// Cron jobs.
    pub crons: bool,
    /// LangSmith tracing (not supported).
    pub langsmith: bool,
    /// `strict_resume`: a resume naming an interrupt that is not pending
    /// fails rather than answering the pending one.
    pub strict_resume: bool,
}

/// The server and its graphs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InfoMetadata {
    /// Always `deepfleet`.
    pub server: String,
    /// The registered graphs (agent spec names), sorted.
    pub graphs: Vec<String>,
}
