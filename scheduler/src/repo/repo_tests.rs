//! Every repository reads the records stored before it existed and
//! writes them back byte for byte: the kinds and the JSON are unchanged,
//! so no migration is needed.

use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::prelude::*;
use pretty_assertions::assert_eq;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Repository;
use super::assistants::{assistants, versions_of};
use super::batches::{batches, members};
use super::follow_marks::follow_marks;
use super::queued::queued;
use super::replies::replies;
use super::runs::runs_of;
use super::threads::threads;

const AT: &str = "2026-01-02T03:04:05.123456789Z";

/// Stores `stored` under the repository's kind the way the untyped code
/// did, reads it typed, writes it back under another id, and compares.
async fn round_trip<T: Serialize + DeserializeOwned>(
    store: &EmbeddedStore,
    repo: Repository<'_, T>,
    kind: &str,
    stored: Value,
) {
    assert_eq!(repo.kind(), kind);
    store.put_record(kind, "old", &stored).await.unwrap();
    let typed = repo.get("old").await.unwrap().unwrap();
    repo.put("new", &typed).await.unwrap();
    assert_eq!(store.get_record(kind, "new").await.unwrap(), Some(stored));
}

fn run_meta() -> Value {
    json!({"run_id": "r", "thread_id": "t", "assistant_id": "a", "graph_id": "g",
        "metadata": {"k": "v"}, "kwargs": {"input": null}, "multitask_strategy": "rollback",
        "batch_id": null, "input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "context": null, "cancelled": true, "created_at": AT})
}

#[tokio::test]
async fn every_kind_keeps_its_name_and_shape() {
    let store = EmbeddedStore::new();
    let thread = json!({"thread_id": "t", "created_at": AT, "updated_at": AT,
        "metadata": {"user": "u"}, "active_run": "r", "temporary": false});
    round_trip(&store, threads(&store), "threads", thread).await;
    round_trip(&store, runs_of(&store, "t"), "runs/t", run_meta()).await;
    round_trip(&store, queued(&store), "queued", run_meta()).await;
    let assistant = json!({"assistant_id": "a", "graph_id": "g", "config": {}, "context": {},
        "metadata": {}, "name": "Untitled", "description": null, "version": 1,
        "created_at": AT, "updated_at": AT});
    round_trip(&store, assistants(&store), "assistants", assistant.clone()).await;
    round_trip(
        &store,
        versions_of(&store, "a"),
        "assistant_versions/a",
        assistant,
    )
    .await;
    let header = json!({"batch_id": "b", "total": 2, "created_at": AT});
    round_trip(&store, batches(&store), "batches", header).await;
    let member = json!({"index": 1, "run_id": "r", "thread_id": "t"});
    round_trip(&store, members(&store, "b"), "batch/b", member).await;
    let reply = json!({"run_id": "r", "thread_id": "t", "id": "job", "reply_to": "q",
        "correlation_id": "c"});
    round_trip(&store, replies(&store), "replies", reply).await;
    round_trip(
        &store,
        follow_marks(&store),
        "followed",
        json!({"until": AT}),
    )
    .await;
}
