//! The composite backend: path prefixes routed to other backends.
//!
//! As deepagents' `CompositeBackend`: the longest matching route wins, the
//! routed backend sees the path with the prefix stripped (`/memories/a.txt`
//! reaches the store as `/a.txt`), and every path in a result is re-prefixed
//! so the model only ever sees full paths. `ls("/")` shows each route as a
//! directory; `glob` and `grep` over the root fan out to every backend.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_proto::FileData;

use super::{Backend, BackendError, FileInfo, GrepResult};

/// A default backend plus prefix routes.
#[derive(Clone)]
pub struct CompositeBackend {
    default: Arc<dyn Backend>,
    /// `(prefix ending with '/', backend)`, longest prefix first.
    routes: Vec<(String, Arc<dyn Backend>)>,
}

/// Where a path goes.
struct Routed<'a> {
    backend: &'a Arc<dyn Backend>,
    /// The path as the backend sees it.
    path: String,
    /// The route prefix without its trailing `/` (empty for the default).
    mount: &'a str,
}

impl CompositeBackend {
    /// Routes each `prefix` (e.g. `/memories/`) to its backend, everything
    /// else to `default`.
    pub fn new(
        default: Arc<dyn Backend>,
        routes: impl IntoIterator<Item = (String, Arc<dyn Backend>)>,
    ) -> Self {
        let mut routes: Vec<(String, Arc<dyn Backend>)> = routes
            .into_iter()
            .map(|(prefix, backend)| (format!("{}/", prefix.trim_end_matches('/')), backend))
            .collect();
        routes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        CompositeBackend { default, routes }
    }

    fn route(&self, path: &str) -> Routed<'_> {
        for (prefix, backend) in &self.routes {
            let mount = prefix.trim_end_matches('/');
            if path == mount {
                return Routed {
                    backend,
                    path: "/".to_owned(),
                    mount,
                };
            }
            if let Some(rest) = path.strip_prefix(prefix.as_str()) {
                return Routed {
                    backend,
                    path: format!("/{rest}"),
                    mount,
                };
            }
        }
        Routed {
            backend: &self.default,
            path: path.to_owned(),
            mount: "",
        }
    }

    /// Whether a search path means "everything".
    fn is_root(path: Option<&str>) -> bool {
        matches!(path, None | Some("/") | Some(""))
    }
}

fn remount(mount: &str, mut entries: Vec<FileInfo>) -> Vec<FileInfo> {
    if !mount.is_empty() {
        for entry in &mut entries {
            entry.path = format!("{mount}{}", entry.path);
        }
    }
    entries
}

fn remount_grep(mount: &str, mut result: GrepResult) -> GrepResult {
    if !mount.is_empty() {
        for hit in &mut result.matches {
            hit.path = format!("{mount}{}", hit.path);
        }
    }
    result
}

#[async_trait]
impl Backend for CompositeBackend {
    async fn ls(&self, path: &str) -> Result<Vec<FileInfo>, BackendError> {
        let routed = self.route(path);
        let entries = remount(routed.mount, routed.backend.ls(&routed.path).await?);
        if path != "/" {
            return Ok(entries);
        }
        let mut seen: BTreeSet<String> = entries.iter().map(|e| e.path.clone()).collect();
        let mut entries = entries;
        for (prefix, _) in &self.routes {
            if seen.insert(prefix.clone()) {
                entries.push(FileInfo {
                    path: prefix.clone(),
                    is_dir: true,
                    size: 0,
                    modified_at: None,
                });
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    async fn read(&self, path: &str) -> Result<FileData, BackendError> {
        let routed = self.route(path);
        routed.backend.read(&routed.path).await
    }

    async fn write(&self, path: &str, content: &str) -> Result<(), BackendError> {
        let routed = self.route(path);
        routed.backend.write(&routed.path, content).await
    }

    async fn delete(&self, path: &str) -> Result<(), BackendError> {
        let routed = self.route(path);
        if !routed.backend.supports_delete() {
            return Err(BackendError::Unsupported(format!(
                "deletion is not supported for '{path}'."
            )));
        }
        routed.backend.delete(&routed.path).await
    }

    async fn glob(&self, pattern: &str, path: Option<&str>) -> Result<Vec<FileInfo>, BackendError> {
        if !Self::is_root(path) {
            let routed = self.route(path.unwrap_or("/"));
            let found = routed.backend.glob(pattern, Some(&routed.path)).await?;
            return Ok(remount(routed.mount, found));
        }
        let mut found = self.default.glob(pattern, None).await?;
        let anchored = pattern.contains('/');
        let absolute = format!("/{}", pattern.trim_start_matches('/'));
        for (prefix, backend) in &self.routes {
            // A pattern with a `/` is anchored at the root: it reaches a
            // route only through the route's prefix, rewritten relative to
            // it. A bare pattern matches basenames everywhere.
            let routed_pattern = if anchored {
                match absolute.strip_prefix(prefix.as_str()) {
                    Some(rest) => format!("/{rest}"),
                    None => continue,
                }
            } else {
                pattern.to_owned()
            };
            let mount = prefix.trim_end_matches('/');
            found.extend(remount(mount, backend.glob(&routed_pattern, None).await?));
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }

    async fn grep(
        &self,
        pattern: &str,
        path: Option<&str>,
        glob: Option<&str>,
        max_count: usize,
    ) -> Result<GrepResult, BackendError> {
        if !Self::is_root(path) {
            let routed = self.route(path.unwrap_or("/"));
            let found = routed
                .backend
                .grep(pattern, Some(&routed.path), glob, max_count)
                .await?;
            return Ok(remount_grep(routed.mount, found));
        }
        let mut result = self.default.grep(pattern, None, glob, max_count).await?;
        for (prefix, backend) in &self.routes {
            let left = max_count.saturating_sub(result.matches.len());
            if left == 0 {
                // The cap is global: a route not searched may hold more.
                result.truncated = true;
                break;
            }
            let mount = prefix.trim_end_matches('/');
            let found = remount_grep(mount, backend.grep(pattern, None, glob, left).await?);
            result.truncated |= found.truncated;
            result.matches.extend(found.matches);
        }
        Ok(result)
    }

    fn supports_delete(&self) -> bool {
        self.default.supports_delete()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::backend::StateBackend;
    use pretty_assertions::assert_eq;

    fn setup() -> (CompositeBackend, StateBackend, StateBackend) {
        let default = StateBackend::new(BTreeMap::new());
        let memories = StateBackend::new(BTreeMap::new());
        let composite = CompositeBackend::new(
            Arc::new(default.clone()),
            [(
                "/memories/".to_owned(),
                Arc::new(memories.clone()) as Arc<dyn Backend>,
            )],
        );
        (composite, default, memories)
    }

    fn paths(entries: Vec<FileInfo>) -> Vec<String> {
        entries.into_iter().map(|e| e.path).collect()
    }

    #[tokio::test]
    async fn routes_strip_and_restore_the_prefix() {
        let (c, default, memories) = setup();
        c.write("/memories/prefs.txt", "tea").await.unwrap();
        c.write("/notes.md", "n").await.unwrap();
        assert_eq!(
            memories.snapshot().keys().collect::<Vec<_>>(),
            ["/prefs.txt"]
        );
        assert_eq!(default.snapshot().keys().collect::<Vec<_>>(), ["/notes.md"]);
        assert_eq!(c.read("/memories/prefs.txt").await.unwrap().content, "tea");
        assert_eq!(
            paths(c.ls("/memories/").await.unwrap()),
            ["/memories/prefs.txt"]
        );
        assert_eq!(
            paths(c.ls("/memories").await.unwrap()),
            ["/memories/prefs.txt"]
        );
        assert_eq!(paths(c.ls("/").await.unwrap()), ["/memories/", "/notes.md"]);
    }

    #[tokio::test]
    async fn longest_prefix_wins() {
        let (_, default, memories) = setup();
        let deep = StateBackend::new(BTreeMap::new());
        let c = CompositeBackend::new(
            Arc::new(default),
            [
                (
                    "/memories".to_owned(),
                    Arc::new(memories.clone()) as Arc<dyn Backend>,
                ),
                (
                    "/memories/team/".to_owned(),
                    Arc::new(deep.clone()) as Arc<dyn Backend>,
                ),
            ],
        );
        c.write("/memories/team/a", "t").await.unwrap();
        c.write("/memories/b", "m").await.unwrap();
        assert_eq!(deep.snapshot().keys().collect::<Vec<_>>(), ["/a"]);
        assert_eq!(memories.snapshot().keys().collect::<Vec<_>>(), ["/b"]);
    }

    #[tokio::test]
    async fn glob_and_grep_fan_out_over_the_root() {
        let (c, _, _) = setup();
        c.write("/a.txt", "needle").await.unwrap();
        c.write("/memories/b.txt", "needle\nneedle").await.unwrap();
        c.write("/memories/deep/c.md", "hay").await.unwrap();
        assert_eq!(
            paths(c.glob("*.txt", None).await.unwrap()),
            ["/a.txt", "/memories/b.txt"]
        );
        assert_eq!(
            paths(c.glob("/memories/**/*.md", None).await.unwrap()),
            ["/memories/deep/c.md"]
        );
        assert_eq!(paths(c.glob("/*.txt", None).await.unwrap()), ["/a.txt"]);
        assert_eq!(
            paths(c.glob("*.md", Some("/memories")).await.unwrap()),
            ["/memories/deep/c.md"]
        );

        let all = c.grep("needle", None, None, 10).await.unwrap();
        let hits: Vec<(String, usize)> = all
            .matches
            .iter()
            .map(|m| (m.path.clone(), m.line))
            .collect();
        assert_eq!(
            hits,
            [
                ("/a.txt".to_owned(), 1),
                ("/memories/b.txt".to_owned(), 1),
                ("/memories/b.txt".to_owned(), 2)
            ]
        );
        let capped = c.grep("needle", Some("/"), None, 2).await.unwrap();
        assert_eq!(capped.matches.len(), 2);
        assert!(capped.truncated);
        let routed = c
            .grep("needle", Some("/memories/"), None, 10)
            .await
            .unwrap();
        assert_eq!(routed.matches[0].path, "/memories/b.txt");
    }

    #[tokio::test]
    async fn delete_goes_to_the_route() {
        let (c, _, memories) = setup();
        c.write("/memories/x/y", "1").await.unwrap();
        c.delete("/memories/x").await.unwrap();
        assert!(memories.snapshot().is_empty());
        assert_eq!(c.delete("/memories/x").await, Err(BackendError::NotFound));
    }
}
