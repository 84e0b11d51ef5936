//! The HTTP API's wire types: the LangGraph Agent Server protocol that
//! `langgraph-sdk` clients and UIs speak (reference `agent-server.md` §1).
//!
//! One module per resource. `*Params` are request bodies, `*Query` query
//! strings, `*Response` answers that wrap a resource; the resources
//! themselves ([`Run`], [`Thread`], [`Assistant`], [`ThreadState`]) carry
//! the reference's names. `serde_json::Value` stays only where the
//! protocol itself is free-form: `input`, `config`, `context`, `values`,
//! `metadata` and a command's `resume`.

pub mod agent_protocols;
pub mod assistant;
pub mod batch;
pub mod cron;
pub mod error;
pub mod graph;
pub mod message;
pub mod run;
pub mod search;
pub mod store_item;
pub mod stream;
pub mod system;
pub mod thread;
pub mod thread_ttl;

pub use agent_protocols::{AgentCardQuery, JsonRpcRequest};
pub use assistant::{
    Assistant, AssistantCountParams, AssistantCreateParams, AssistantLatestParams,
    AssistantPatchParams, AssistantSearchParams, AssistantVersionsParams,
};
pub use batch::{BatchCounts, BatchResponse, BatchRun, BatchRunsQuery, BatchRunsResponse};
pub use cron::{Cron, CronCountParams, CronCreateParams, CronSearchParams, CronUpdateParams};
pub use error::{ErrorResponse, RunFailure, WaitErrorResponse};
pub use graph::{AssistantGraph, GraphEdge, GraphNode, GraphQuery, GraphSchemas, SubgraphsQuery};
pub use message::{MessageContent, MessageDict, ToolCallChunkDict, ToolCallDict};
pub use run::{
    CancelStatus, MultitaskStrategy, ResumeDecisions, Run, RunCancelManyParams, RunCancelManyQuery,
    RunCancelQuery, RunCommand, RunCreateParams, RunListQuery, RunStatus, RunStreamQuery,
    RunWebhook, StreamMode,
};
pub use search::{AssistantSortBy, CronSortBy, PageLimit, PageTooLarge, SortOrder, ThreadSortBy};
pub use store_item::{
    ItemDeleteParams, ItemGetQuery, ItemPutParams, ItemSearchParams, ItemSearchResponse,
    NamespaceListParams, NamespaceListResponse,
};
pub use stream::{EventMetadata, MessageMetadata, NodeUpdate, StreamMetadata};
pub use system::{InfoFlags, InfoMetadata, InfoResponse, OkResponse};
pub use thread::{
    CheckpointPointer, CheckpointRef, MADE_BY_KEYS, PendingInterrupt, PruneStrategy, StateMetadata,
    Thread, ThreadCountParams, ThreadCreateParams, ThreadHistoryParams, ThreadPatchParams,
    ThreadPruneParams, ThreadPruneResponse, ThreadSearchParams, ThreadState,
    ThreadStateCheckpointParams, ThreadStatePatch, ThreadStateUpdate, ThreadStateUpdateResponse,
    ThreadStatus, ThreadSuperstep, ThreadSuperstepUpdate,
};
pub use thread_ttl::{ThreadTtl, TtlStrategy};
