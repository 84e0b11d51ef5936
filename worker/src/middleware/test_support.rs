//! A step context for middleware unit tests: a fresh run of a spec over
//! an empty state backend.

use deepfleet_proto::{AgentSpec, RunRecord};
use serde_json::json;

use crate::context::StepContext;

/// A first step of a run of `name: agent, model: replay:x` plus
/// `spec_extra` (YAML lines).
pub(crate) fn test_cx(spec_extra: &str) -> StepContext {
    let spec = AgentSpec::from_yaml(&format!("name: agent\nmodel: replay:x\n{spec_extra}"))
        .unwrap_or_else(|e| panic!("test spec: {e}"));
    let run: RunRecord = serde_json::from_value(json!({
        "run_id": "run-1",
        "thread_id": "thread-1",
        "agent": "agent",
        "status": "running",
        "created_at": "2026-01-02T03:04:05Z",
        "updated_at": "2026-01-02T03:04:05Z",
    }))
    .unwrap_or_else(|e| panic!("test run: {e}"));
    StepContext::test(spec, run)
}
