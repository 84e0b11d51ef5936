//! [`deepfleet_store::Specs`] scenarios.

use std::sync::Arc;

use deepfleet_proto::AgentSpec;
use deepfleet_store::Specs;
use pretty_assertions::assert_eq;
use serde_json::json;

pub async fn spec_put_get(store: Arc<dyn Specs>) {
    let mut spec: AgentSpec =
        serde_json::from_value(json!({"name": "researcher", "model": "replay:a.yaml"})).unwrap();
    assert_eq!(store.get_spec("researcher").await.unwrap(), None);
    store.put_spec(&spec).await.unwrap();
    assert_eq!(
        store.get_spec("researcher").await.unwrap(),
        Some(spec.clone())
    );
    spec.system_prompt = Some("Be brief.".into());
    store.put_spec(&spec).await.unwrap();
    assert_eq!(store.get_spec("researcher").await.unwrap(), Some(spec));
}

conformance!(spec_put_get);
