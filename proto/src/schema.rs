//! JSON Schemas of the wire types, for services in other languages.
//!
//! The files under `proto/schema/` are generated from these types; a test
//! fails when they drift (`UPDATE_SCHEMAS=1 cargo test -p deepfleet-proto`
//! rewrites them).

use schemars::{JsonSchema, Schema, schema_for};

/// Every exported schema, by file stem.
pub fn all() -> Vec<(&'static str, Schema)> {
    fn one<T: JsonSchema>(name: &'static str) -> (&'static str, Schema) {
        (name, schema_for!(T))
    }
    vec![
        one::<crate::job::Envelope>("envelope"),
        one::<crate::spec::AgentSpec>("agent_spec"),
        one::<crate::batch::TaskLine>("task_line"),
        one::<crate::batch::ResultLine>("result_line"),
        one::<crate::run::RunRecord>("run_record"),
        one::<crate::message::Message>("message"),
        one::<crate::checkpoint::FileData>("file_data"),
        one::<crate::item::Item>("item"),
        one::<crate::submission::Submission>("submission"),
        one::<crate::run_event::RunEvent>("run_event"),
        one::<crate::run_delta::RunDelta>("run_delta"),
        one::<crate::submission::SubmissionResult>("submission_result"),
        one::<crate::submission::SubmissionRefusal>("submission_refusal"),
        one::<crate::api::RunCreateParams>("api_run_create_params"),
        one::<crate::api::Run>("api_run"),
        one::<crate::api::RunWebhook>("api_run_webhook"),
        one::<crate::api::Thread>("api_thread"),
        one::<crate::api::ThreadCreateParams>("api_thread_create_params"),
        one::<crate::api::ThreadHistoryParams>("api_thread_history_params"),
        one::<crate::api::ThreadSearchParams>("api_thread_search_params"),
        one::<crate::api::ThreadState>("api_thread_state"),
        one::<crate::api::ThreadStateCheckpointParams>("api_thread_state_checkpoint_params"),
        one::<crate::api::ThreadStateUpdate>("api_thread_state_update"),
        one::<crate::api::ThreadStateUpdateResponse>("api_thread_state_update_response"),
        one::<crate::api::Assistant>("api_assistant"),
        one::<crate::api::AssistantGraph>("api_assistant_graph"),
        one::<crate::api::GraphSchemas>("api_graph_schemas"),
        one::<crate::api::AssistantCreateParams>("api_assistant_create_params"),
        one::<crate::api::AssistantSearchParams>("api_assistant_search_params"),
        one::<crate::api::ItemPutParams>("api_item_put_params"),
        one::<crate::api::ItemDeleteParams>("api_item_delete_params"),
        one::<crate::api::ItemSearchParams>("api_item_search_params"),
        one::<crate::api::ItemSearchResponse>("api_item_search_response"),
        one::<crate::api::NamespaceListParams>("api_namespace_list_params"),
        one::<crate::api::NamespaceListResponse>("api_namespace_list_response"),
        one::<crate::api::Cron>("api_cron"),
        one::<crate::api::CronCreateParams>("api_cron_create_params"),
        one::<crate::api::CronUpdateParams>("api_cron_update_params"),
        one::<crate::api::CronSearchParams>("api_cron_search_params"),
        one::<crate::api::CronCountParams>("api_cron_count_params"),
        one::<crate::api::BatchResponse>("api_batch_response"),
        one::<crate::api::BatchRunsResponse>("api_batch_runs_response"),
        one::<crate::api::MessageDict>("api_message"),
        one::<crate::api::ErrorResponse>("api_error_response"),
        one::<crate::api::WaitErrorResponse>("api_wait_error_response"),
        one::<crate::api::InfoResponse>("api_info_response"),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    #[test]
    fn committed_schemas_match_the_types() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema");
        let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
        let mut stale = Vec::new();
        for (name, schema) in super::all() {
            let path = dir.join(format!("{name}.json"));
            let fresh = serde_json::to_string_pretty(&schema).unwrap() + "\n";
            if update {
                std::fs::write(&path, &fresh).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(fresh.as_str()) {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "stale schemas {stale:?}; run UPDATE_SCHEMAS=1 cargo test -p deepfleet-proto"
        );
    }
}
