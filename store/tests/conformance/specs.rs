//! [`deepfleet_store::Specs`] scenarios.

use std::sync::Arc;

use deepfleet_proto::{AgentSpec, spec_version};
use deepfleet_store::Specs;
use pretty_assertions::assert_eq;
use serde_json::json;

fn researcher() -> AgentSpec {
    serde_json::from_value(json!({"name": "researcher", "model": "replay:a.yaml"})).unwrap()
}

pub async fn a_served_spec_is_replaced_by_serving_another(store: Arc<dyn Specs>) {
    let mut spec = researcher();
    assert_eq!(store.get_spec("researcher").await.unwrap(), None);
    let first = store.serve_spec(&spec).await.unwrap();
    assert_eq!(first, spec_version(&spec));
    assert_eq!(
        store.get_spec("researcher").await.unwrap(),
        Some(spec.clone())
    );
    spec.system_prompt = Some("Be brief.".into());
    let second = store.serve_spec(&spec).await.unwrap();
    assert_ne!(first, second);
    let served = store.served_spec("researcher").await.unwrap().unwrap();
    assert_eq!((served.version, served.spec), (second, spec));
    // The replaced version is still there for the runs pinned to it.
    assert_eq!(
        store.get_spec_version("researcher", &first).await.unwrap(),
        Some(researcher())
    );
}

pub async fn a_stored_version_serves_nothing(store: Arc<dyn Specs>) {
    let served = researcher();
    let served_version = store.serve_spec(&served).await.unwrap();
    let other = AgentSpec {
        system_prompt: Some("Someone else's.".into()),
        ..researcher()
    };
    let version = store.put_spec_version(&other).await.unwrap();
    assert_eq!(store.put_spec_version(&other).await.unwrap(), version);
    assert_eq!(
        store
            .get_spec_version("researcher", &version)
            .await
            .unwrap(),
        Some(other)
    );
    let still = store.served_spec("researcher").await.unwrap().unwrap();
    assert_eq!((still.version, still.spec), (served_version, served));
    assert_eq!(
        store.get_spec_version("researcher", "0000").await.unwrap(),
        None
    );
    assert_eq!(
        store.get_spec_version("nobody", &version).await.unwrap(),
        None
    );
}

conformance!(
    a_served_spec_is_replaced_by_serving_another,
    a_stored_version_serves_nothing
);
