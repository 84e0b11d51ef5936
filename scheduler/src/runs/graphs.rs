//! The graphs an API serves: the names of the registered agent specs. A
//! development server adds graphs while it runs (a spec file appears in
//! its agents folder), so the set is shared and can grow.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock};

/// The served graph names, shared by every handler.
#[derive(Clone, Debug, Default)]
pub struct Graphs(Arc<RwLock<BTreeSet<String>>>);

impl Graphs {
    /// These graphs.
    pub fn new(names: impl IntoIterator<Item = String>) -> Self {
        Graphs(Arc::new(RwLock::new(names.into_iter().collect())))
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// Whether `name` is served.
    pub fn contains(&self, name: &str) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
    }

    /// Serves `name` too; false when it already was.
    pub fn add(&self, name: &str) -> bool {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_graphs_are_seen_by_every_clone_sorted() {
        let graphs = Graphs::new(["b".to_owned()]);
        let seen = graphs.clone();
        assert!(graphs.add("a"));
        assert!(!graphs.add("b"));
        assert_eq!(seen.names(), ["a", "b"]);
        assert!(seen.contains("a") && !seen.contains("c"));
    }
}
