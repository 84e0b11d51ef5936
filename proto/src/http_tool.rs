//! HTTP tools: a tool an agent spec declares as a plain HTTP endpoint of
//! another service (`http_tools`), for teams whose tools live in their own
//! services rather than in a worker binary.
//!
//! The URL is a template whose placeholders (`{key}`) take arguments of
//! the call, only after the host: a model-supplied value can never change
//! the scheme, host or port. Arguments are checked against `parameters`
//! before any request.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec_error::SpecError;
use crate::value_source::ValueSource;

/// The default limit of one attempt, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// The default number of retries of an idempotent call.
pub const DEFAULT_RETRIES: u32 = 2;
/// The default largest answer read, in bytes.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;
/// The most retries a tool may ask for.
pub const MAX_RETRIES: u32 = 10;

/// One HTTP tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does and when to use it, for the model.
    pub description: String,
    /// JSON Schema (an object) of its arguments, as the model sees it.
    #[serde(default = "empty_object_schema")]
    pub parameters: serde_json::Value,
    /// `http(s)://host[:port]/path?query`, with `{argument}` placeholders
    /// in the path and query only.
    pub url: String,
    /// `GET` (default), `POST`, `PUT`, `PATCH`, `DELETE` or `HEAD`.
    #[serde(default)]
    pub method: HttpMethod,
    /// Request headers, each from a literal, a worker secret, the run's
    /// context or the thread's state.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, ValueSource>,
    /// Fields added to the call's arguments from the run's context, the
    /// thread's state or a secret (never shown to the model): query
    /// parameters of a bodiless method, body fields otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, ValueSource>,
    /// Custom state fields an answer may set through its `state_update`
    /// object; others are ignored and the model is told so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updates_state: Vec<String>,
    /// Limit of one attempt, in seconds. Default: 30.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Retries after a connection error, a timeout, a 429 or a 5xx, for
    /// idempotent methods only (all but `POST` and `PATCH`). Default: 2.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Largest answer read, in bytes; a longer one is an error. Default:
    /// 1 MiB.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: u64,
}

/// The methods an HTTP tool may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// `GET`.
    #[default]
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// `HEAD`.
    Head,
}

impl HttpMethod {
    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Head => "HEAD",
        }
    }

    /// Whether repeating a call does no more than making it once, so a
    /// failed attempt may be retried.
    pub fn is_idempotent(self) -> bool {
        !matches!(self, HttpMethod::Post | HttpMethod::Patch)
    }

    /// Whether the call's arguments travel as a JSON body (else as query
    /// parameters).
    pub fn has_body(self) -> bool {
        matches!(self, HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch)
    }
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

fn default_retries() -> u32 {
    DEFAULT_RETRIES
}

fn default_max_response_bytes() -> u64 {
    DEFAULT_MAX_RESPONSE_BYTES
}

/// The template's placeholders, in order.
pub fn placeholders(url: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            break;
        };
        out.push(&after[..close]);
        rest = &after[close + 1..];
    }
    out
}

/// Where the template's origin (`scheme://host[:port]`) ends: the first
/// `/`, `?` or `#` after `://`, or its end.
pub fn origin_end(url: &str) -> Option<usize> {
    let start = url.find("://")? + 3;
    Some(
        url[start..]
            .find(['/', '?', '#'])
            .map_or(url.len(), |i| start + i),
    )
}

impl HttpToolSpec {
    /// Checks the tool as the spec's field `at` (`http_tools[0]`).
    pub fn validate(&self, at: &str) -> Result<(), SpecError> {
        let field = |f: &str| format!("{at}.{f}");
        crate::spec_name::check_name(&field("name"), &self.name)?;
        if self.description.trim().is_empty() {
            return Err(SpecError::field(field("description"), "must not be empty"));
        }
        if !self.parameters.is_object() {
            return Err(SpecError::field(
                field("parameters"),
                "must be a JSON Schema object",
            ));
        }
        let scheme_ok = self.url.starts_with("http://") || self.url.starts_with("https://");
        let origin = origin_end(&self.url)
            .filter(|_| scheme_ok)
            .ok_or_else(|| SpecError::field(field("url"), "must start with http:// or https://"))?;
        if self.url[..origin].contains(['{', '}']) {
            return Err(SpecError::field(
                field("url"),
                "placeholders may only stand in the path and query, never in the scheme, host or port",
            ));
        }
        if origin == self.url.find("://").map_or(0, |i| i + 3) {
            return Err(SpecError::field(field("url"), "names no host"));
        }
        let properties = self.parameters.get("properties");
        for name in placeholders(&self.url) {
            if properties.and_then(|p| p.get(name)).is_none() {
                return Err(SpecError::field(
                    field("url"),
                    format!("placeholder {{{name}}} is not a property of parameters"),
                ));
            }
        }
        if self.timeout_secs == 0 {
            return Err(SpecError::field(
                field("timeout_secs"),
                "must be at least 1",
            ));
        }
        if self.retries > MAX_RETRIES {
            return Err(SpecError::field(
                field("retries"),
                format!("must be at most {MAX_RETRIES}"),
            ));
        }
        if self.max_response_bytes == 0 {
            return Err(SpecError::field(
                field("max_response_bytes"),
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(yaml: &str) -> HttpToolSpec {
        serde_norway::from_str(yaml).unwrap()
    }

    const BASE: &str = "name: lookup\ndescription: Looks a ticket up.\nparameters: {type: object, properties: {key: {type: string}}}\n";

    #[test]
    fn placeholders_stand_after_the_host_and_name_parameters() {
        let ok = tool(&format!(
            "{BASE}url: https://t.example:8443/tickets/{{key}}?full=1\n"
        ));
        ok.validate("http_tools[0]").unwrap();
        assert_eq!(ok.method, HttpMethod::Get);
        assert_eq!(ok.timeout_secs, DEFAULT_TIMEOUT_SECS);
        for (url, says) in [
            (
                "https://{key}.example/x",
                "never in the scheme, host or port",
            ),
            (
                "https://t.example:{key}/x",
                "never in the scheme, host or port",
            ),
            ("ftp://t.example/{key}", "must start with http"),
            ("https:///x", "names no host"),
            ("https://t.example/{nope}", "{nope} is not a property"),
        ] {
            let e = tool(&format!("{BASE}url: \"{url}\"\n"))
                .validate("http_tools[0]")
                .unwrap_err();
            assert_eq!(e.field, "http_tools[0].url", "{url}");
            assert!(e.message.contains(says), "{url}: {}", e.message);
        }
    }

    #[test]
    fn only_bodiless_and_put_delete_calls_are_retried() {
        assert!(HttpMethod::Get.is_idempotent() && HttpMethod::Put.is_idempotent());
        assert!(!HttpMethod::Post.is_idempotent() && !HttpMethod::Patch.is_idempotent());
        assert!(HttpMethod::Post.has_body() && !HttpMethod::Delete.has_body());
    }
}
