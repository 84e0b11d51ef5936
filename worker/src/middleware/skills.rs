//! Skills: `{source}/{name}/SKILL.md` files from the spec's `skills:`
//! sources, listed by name and description in the Skills slot
//! (progressive disclosure: the model reads a SKILL.md when it needs it).
//!
//! Metadata is read through the backend once per thread and kept in the
//! thread's custom state (under [`STATE_KEY`]), so the listing is stable
//! across steps. Sources are read in order and a later source's skill
//! replaces an earlier one of the same name. Limits follow deepagents:
//! SKILL.md up to 10 MiB, description cut at 1,024 characters,
//! compatibility at 500; a name that breaks the naming rules (1-64
//! lowercase letters, digits and single hyphens, equal to its directory)
//! is logged and the skill still loads.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tracing::warn;

use crate::backend::{BackendError, FileInfo};
use crate::context::StepContext;
use crate::error::StepError;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};

/// Where the loaded metadata lives in the thread's custom state.
pub const STATE_KEY: &str = "_skills";

const TEMPLATE: &str = include_str!("../prompts/skills.md");
const MAX_SKILL_BYTES: usize = 10 * 1024 * 1024;
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1024;
const MAX_COMPATIBILITY: usize = 500;

/// One skill as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillMeta {
    /// From the frontmatter.
    pub name: String,
    /// From the frontmatter, cut at 1,024 characters.
    pub description: String,
    /// The SKILL.md path.
    pub path: String,
    /// From the frontmatter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// From the frontmatter, cut at 500 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// `allowed-tools`, split on spaces or commas (or a YAML list).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// `metadata`, values as strings.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// Lists the skills of the configured sources.
pub struct Skills {
    sources: Vec<String>,
}

impl Skills {
    /// Skills from these sources; later ones win.
    pub fn new(sources: Vec<String>) -> Self {
        Skills { sources }
    }

    fn loaded(&self, state: &Map<String, Value>) -> Option<Vec<SkillMeta>> {
        let cached = state.get(STATE_KEY)?;
        let same = cached
            .get("sources")
            .and_then(Value::as_array)
            .is_some_and(|s| {
                s.iter()
                    .map(Value::as_str)
                    .eq(self.sources.iter().map(|s| Some(s.as_str())))
            });
        if !same {
            return None;
        }
        serde_json::from_value(cached.get("skills")?.clone()).ok()
    }

    async fn load(&self, cx: &StepContext) -> Result<Vec<SkillMeta>, StepError> {
        let mut skills: Vec<SkillMeta> = Vec::new();
        for source in &self.sources {
            let entries = match cx.backend.ls(source).await {
                Ok(entries) => entries,
                Err(BackendError::Unavailable(reason)) => return Err(unavailable(source, reason)),
                Err(e) => {
                    warn!(source, error = %e, "skill source cannot be listed");
                    continue;
                }
            };
            for dir in entries.iter().filter(|e| e.is_dir) {
                let Some(skill) = self.load_one(cx, dir).await? else {
                    continue;
                };
                match skills.iter_mut().find(|s| s.name == skill.name) {
                    Some(earlier) => *earlier = skill,
                    None => skills.push(skill),
                }
            }
        }
        Ok(skills)
    }

    async fn load_one(
        &self,
        cx: &StepContext,
        dir: &FileInfo,
    ) -> Result<Option<SkillMeta>, StepError> {
        let path = format!("{}/SKILL.md", dir.path.trim_end_matches('/'));
        let file = match cx.backend.read(&path).await {
            Ok(file) => file,
            Err(BackendError::NotFound) => return Ok(None),
            Err(BackendError::Unavailable(reason)) => return Err(unavailable(&path, reason)),
            Err(e) => {
                warn!(path, error = %e, "skill cannot be read");
                return Ok(None);
            }
        };
        if file.content.len() > MAX_SKILL_BYTES {
            warn!(path, "SKILL.md is larger than 10 MiB; skipped");
            return Ok(None);
        }
        let dir_name = dir
            .path
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        match parse(&path, dir_name, &file.content) {
            Ok(skill) => Ok(Some(skill)),
            Err(why) => {
                warn!(path, why, "skill skipped");
                Ok(None)
            }
        }
    }

    fn render(&self, skills: &[SkillMeta]) -> String {
        let last = self.sources.len().saturating_sub(1);
        let sources = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let priority = if i == last && last > 0 {
                    " (higher priority)"
                } else {
                    ""
                };
                format!("**{} Skills**: `{s}`{priority}", label(s))
            })
            .collect::<Vec<_>>()
            .join("\n");
        let listing = if skills.is_empty() {
            let places = self
                .sources
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(" or ");
            format!("(No skills available yet. You can create skills in {places})")
        } else {
            skills
                .iter()
                .map(render_skill)
                .collect::<Vec<_>>()
                .join("\n")
        };
        TEMPLATE
            .replace("{sources}", &sources)
            .replace("{skills}", &listing)
    }
}

fn unavailable(path: &str, reason: String) -> StepError {
    StepError::Tool {
        tool: "skills".to_owned(),
        message: format!("reading {path}: {reason}"),
    }
}

/// A source's label: its last path component, capitalised; a leaf named
/// `skills` takes its parent's name.
fn label(source: &str) -> String {
    let parts: Vec<&str> = source.split('/').filter(|p| !p.is_empty()).collect();
    let leaf = match parts.as_slice() {
        [.., parent, "skills"] => parent,
        [.., leaf] => leaf,
        [] => "Root",
    };
    let mut chars = leaf.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// One listing entry (deepagents conformance §13.2 item 23).
fn render_skill(skill: &SkillMeta) -> String {
    let mut line = format!("- **{}**: {}", skill.name, skill.description);
    let notes: Vec<String> = [
        skill.license.as_ref().map(|l| format!("License: {l}")),
        skill
            .compatibility
            .as_ref()
            .map(|c| format!("Compatibility: {c}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !notes.is_empty() {
        line.push_str(&format!(" ({})", notes.join(", ")));
    }
    if !skill.allowed_tools.is_empty() {
        line.push_str(&format!(
            "\n  -> Allowed tools: {}",
            skill.allowed_tools.join(", ")
        ));
    }
    line.push_str(&format!(
        "\n  -> Read `{}` for full instructions",
        skill.path
    ));
    line
}

/// Parses a SKILL.md's frontmatter; `Err` says why the skill is skipped.
fn parse(path: &str, dir_name: &str, content: &str) -> Result<SkillMeta, String> {
    let rest = content
        .strip_prefix("---")
        .and_then(|r| r.trim_start_matches([' ', '\t']).strip_prefix('\n'))
        .ok_or("no YAML frontmatter (the file must start with ---)")?;
    let end = rest
        .find("\n---")
        .ok_or("frontmatter is not closed with ---")?;
    let yaml: Value =
        serde_norway::from_str(&rest[..end]).map_err(|e| format!("frontmatter: {e}"))?;
    let Value::Object(fields) = yaml else {
        return Err("frontmatter is not a mapping".to_owned());
    };
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let name = text("name").ok_or("frontmatter has no name")?;
    let description = text("description").ok_or("frontmatter has no description")?;
    if !valid_name(&name) || name != dir_name {
        warn!(
            path,
            name,
            "skill name should be 1-64 lowercase letters, digits and single hyphens, equal to its directory"
        );
    }
    let allowed_tools = match fields.get("allowed-tools") {
        Some(Value::String(s)) => s
            .split([' ', ','])
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let metadata = match fields.get("metadata") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                (k.clone(), Value::String(v))
            })
            .collect(),
        _ => Map::new(),
    };
    Ok(SkillMeta {
        description: cut(&description, MAX_DESCRIPTION),
        compatibility: text("compatibility").map(|c| cut(&c, MAX_COMPATIBILITY)),
        license: text("license"),
        name,
        path: path.to_owned(),
        allowed_tools,
        metadata,
    })
}

fn valid_name(name: &str) -> bool {
    let chars_ok = name
        .chars()
        .all(|c| c == '-' || c.is_numeric() || (c.is_alphabetic() && !c.is_uppercase()));
    (1..=MAX_NAME).contains(&name.chars().count())
        && chars_ok
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The first `max` characters.
fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[async_trait]
impl Middleware for Skills {
    fn name(&self) -> &'static str {
        "skills"
    }

    fn prompt(&self, cx: &StepContext) -> Option<PromptSection> {
        let state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
        let skills = self.loaded(&state).unwrap_or_default();
        Some(PromptSection::new(Slot::Skills, self.render(&skills)))
    }

    async fn before_model(&self, cx: &mut StepContext) -> Result<(), StepError> {
        {
            let state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
            if self.loaded(&state).is_some() {
                return Ok(());
            }
        }
        let skills = self.load(cx).await?;
        cx.state.lock().unwrap_or_else(|e| e.into_inner()).insert(
            STATE_KEY.to_owned(),
            json!({"sources": self.sources, "skills": skills}),
        );
        Ok(())
    }
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
