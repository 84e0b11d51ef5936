//! [`ReplayProvider`]: `replay:PATH` models, served to
//! [`deepfleet_model::Providers`] as a registered factory.
//!
//! Every client of one path shares one [`ReplayEngine`], so a script's
//! `times` counters hold across the steps (and retries) of a process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::{ErrorKind, ModelClient, ModelError, ProviderFactory, Providers};

use crate::client::ReplayClient;
use crate::engine::ReplayEngine;

/// The provider name of scripted models (`replay:PATH`).
pub const PROVIDER: &str = "replay";

/// Loads each script once and hands out clients over its engine.
#[derive(Debug, Default)]
pub struct ReplayProvider {
    engines: Mutex<HashMap<PathBuf, Arc<ReplayEngine>>>,
}

/// `providers`, also serving `replay:PATH` models (from a fresh
/// [`ReplayProvider`]).
pub fn register(providers: Providers) -> Providers {
    providers.with_factory(PROVIDER, Arc::new(ReplayProvider::default()))
}

impl ReplayProvider {
    fn engine(&self, path: &str) -> Result<Arc<ReplayEngine>, ModelError> {
        let mut engines = self.engines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(engine) = engines.get(&PathBuf::from(path)) {
            return Ok(engine.clone());
        }
        // A broken script is a configuration mistake: fail the call for
        // good rather than retrying it.
        let engine = Arc::new(
            ReplayEngine::load(path)
                .map_err(|e| ModelError::new(ErrorKind::BadRequest, e.to_string()))?,
        );
        engines.insert(PathBuf::from(path), engine.clone());
        Ok(engine)
    }
}

impl ProviderFactory for ReplayProvider {
    fn client(&self, path: &str, retry: RetryPolicy) -> Result<Arc<dyn ModelClient>, ModelError> {
        Ok(Arc::new(
            ReplayClient::new(self.engine(path)?).with_retry(retry),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_model::{CallPurpose, ModelRequest};
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn replay_paths_share_one_engine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.yaml");
        std::fs::write(
            &path,
            "rules:\n  - error: {status: 500, message: boom, times: 1}\n  - reply: {text: hi}\n",
        )
        .unwrap();
        let providers =
            register(Providers::with_env(HashMap::new(), |_| None)).with_retry(RetryPolicy::none());
        let spec = format!("replay:{}", path.display());
        let request = ModelRequest {
            model: String::new(),
            system: "".into(),
            messages: vec![deepfleet_proto::Message::user("x")],
            tools: vec![].into(),
            max_output_tokens: None,
            cache_key: None,
            cache_breakpoints: Vec::new(),
            purpose: CallPurpose::Agent,
            sampling: Default::default(),
            rate: Default::default(),
        };
        let first = providers.resolve(&spec).unwrap();
        assert_eq!(first.model, path.display().to_string());
        let error = first.client.complete(&request).await.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Server);
        // The second client sees the same counter: the one failure is spent.
        let second = providers.resolve(&spec).unwrap();
        assert!(second.client.complete(&request).await.is_ok());

        let error = providers.resolve("replay:/nonexistent.yaml").err().unwrap();
        assert_eq!(error.kind, ErrorKind::BadRequest);
        assert!(
            error.message.contains("/nonexistent.yaml"),
            "{}",
            error.message
        );
    }

    #[test]
    fn without_registration_replay_is_an_unknown_provider() {
        let providers = Providers::with_env(HashMap::new(), |_| None);
        let error = providers.resolve("replay:/any.yaml").err().unwrap();
        assert_eq!(error.kind, ErrorKind::Unsupported);
    }
}
