//! Reloading the specs `deepfleet dev` serves: their files are polled (a
//! stat per file each second costs nothing at the size of an agents
//! folder, and needs no file-watching dependency), and a spec file that
//! changed or appeared in the folder is loaded and registered again. Workers read
//! the spec from the store at every step, so a run's next step uses the
//! edit. A broken edit is logged and the previous spec kept; a removed
//! file leaves its graph served (threads may still use it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use deepfleet_proto::AgentSpec;
use deepfleet_scheduler::Intake;
use deepfleet_scheduler::runs::Graphs;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::agent_source::AgentSource;

/// Loads and checks one spec file.
pub type SpecLoader = Arc<dyn Fn(&Path) -> anyhow::Result<AgentSpec> + Send + Sync>;

/// When a file was last written, and its length: a write within the
/// clock's granularity still changes one of them, mostly.
type Fingerprint = (Option<SystemTime>, u64);

/// Watches the spec files of a source and registers what changes.
pub struct SpecWatch {
    source: AgentSource,
    intake: Intake,
    graphs: Graphs,
    load: SpecLoader,
    seen: BTreeMap<PathBuf, Fingerprint>,
}

impl SpecWatch {
    /// A watch of `source`, registering into `intake` and `graphs`, that
    /// takes its files as they are now as loaded.
    pub fn new(source: AgentSource, intake: Intake, graphs: Graphs, load: SpecLoader) -> Self {
        let mut watch = SpecWatch {
            source,
            intake,
            graphs,
            load,
            seen: BTreeMap::new(),
        };
        watch.seen = watch.changed().into_iter().collect();
        watch
    }

    /// Checks the files every `every` until `shutdown`.
    pub async fn run(mut self, every: Duration, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(every) => self.check().await,
            }
        }
    }

    /// Loads and registers the spec files that changed since the last
    /// check.
    pub async fn check(&mut self) {
        for (path, print) in self.changed() {
            self.seen.insert(path.clone(), print);
            self.reload(&path).await;
        }
    }

    /// The YAML files whose fingerprint differs from the one seen.
    fn changed(&self) -> Vec<(PathBuf, Fingerprint)> {
        let files = self.source.files().unwrap_or_else(|e| {
            warn!(error = format!("{e:#}"), "cannot list the agents folder");
            Vec::new()
        });
        files
            .into_iter()
            .filter_map(|path| {
                let meta = std::fs::metadata(&path).ok()?;
                let print = (meta.modified().ok(), meta.len());
                (self.seen.get(&path) != Some(&print)).then_some((path, print))
            })
            .collect()
    }

    async fn reload(&self, path: &Path) {
        let file = path.display();
        let spec = match self.source.load_one(path, &*self.load) {
            Ok(Some(spec)) => spec,
            Ok(None) => return,
            Err(e) => {
                error!(%file, error = format!("{e:#}"), "the edited spec does not load; the previous one stays");
                return;
            }
        };
        if let Err(e) = self.intake.register(&spec).await {
            error!(%file, error = %e, "the edited spec was refused; the previous one stays");
            return;
        }
        if self.graphs.add(&spec.name) {
            info!(%file, graph = %spec.name, "new agent spec served");
        } else {
            info!(%file, graph = %spec.name, "agent spec reloaded");
        }
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::Store;
    use deepfleet_store::embedded::EmbeddedStore;

    use super::*;

    fn loader() -> SpecLoader {
        Arc::new(|path: &Path| {
            let text = std::fs::read_to_string(path)?;
            AgentSpec::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
        })
    }

    async fn prompt(store: &dyn Store, name: &str) -> Option<String> {
        store.get_spec(name).await.unwrap()?.system_prompt
    }

    #[tokio::test]
    async fn edits_are_registered_and_broken_ones_keep_the_previous_spec() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("agent.yaml");
        std::fs::write(&spec, "name: a\nmodel: openai:x\nsystem_prompt: one\n").unwrap();
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let intake = Intake::new(Arc::clone(&store), Arc::new(MemoryQueue::new()));
        let graphs = Graphs::default();
        let source = AgentSource::Folder(dir.path().to_owned());
        let mut watch = SpecWatch::new(source.clone(), intake.clone(), graphs.clone(), loader());
        crate::cmd::scheduler::register_graphs(&intake, &source, &*loader(), &graphs)
            .await
            .unwrap();
        watch.check().await;
        assert_eq!(prompt(&*store, "a").await.as_deref(), Some("one"));

        std::fs::write(&spec, "name: a\nmodel: openai:x\nsystem_prompt: second\n").unwrap();
        watch.check().await;
        assert_eq!(prompt(&*store, "a").await.as_deref(), Some("second"));

        // A broken edit: the previous spec stays.
        std::fs::write(&spec, "name: a\nmodel: openai:x\nlimitz: {}\n").unwrap();
        watch.check().await;
        assert_eq!(prompt(&*store, "a").await.as_deref(), Some("second"));

        // A new spec is served, a new script is not a graph.
        std::fs::write(dir.path().join("b.yml"), "name: b\nmodel: openai:x\n").unwrap();
        std::fs::write(dir.path().join("script.yaml"), "rules: []\n").unwrap();
        watch.check().await;
        assert_eq!(graphs.names(), ["a", "b"]);
        assert!(store.get_spec("b").await.unwrap().is_some());
    }
}
