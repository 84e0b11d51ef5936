//! Crons: schedules that create runs (`/runs/crons`,
//! `/threads/{id}/runs/crons`), the Cron resource and the bodies that
//! create, change, search and count them.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::run::RunCreateParams;
use super::search::{CronSortBy, PageLimit, SortOrder};

/// `POST /runs/crons` and `POST /threads/{id}/runs/crons`: a schedule and
/// the run each firing creates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronCreateParams {
    /// A cron expression: five fields (minute hour day month weekday), or
    /// six with seconds first.
    pub schedule: String,
    /// The IANA time zone the schedule is read in (`Europe/Paris`); null
    /// is UTC.
    #[serde(default)]
    pub timezone: Option<String>,
    /// No run is created after this time (RFC 3339; without an offset,
    /// UTC).
    #[serde(default)]
    pub end_time: Option<String>,
    /// A disabled cron creates no run (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Stateless crons: `delete` (the default) drops each run's thread
    /// when the run ends, `keep` keeps it.
    #[serde(default)]
    pub on_run_completed: Option<String>,
    /// The run each firing creates (the cron's `payload`).
    #[serde(flatten)]
    pub run: RunCreateParams,
}

/// `PATCH /runs/crons/{cron_id}`: every field optional; the run fields
/// given (`input`, `metadata`, `config`, `context`, `webhook`,
/// `stream_mode`, ...) replace the payload's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronUpdateParams {
    /// A new schedule.
    #[serde(default)]
    pub schedule: Option<String>,
    /// A new time zone.
    #[serde(default)]
    pub timezone: Option<String>,
    /// A new end time; null clears it, absent leaves it.
    #[serde(default, deserialize_with = "present")]
    pub end_time: Option<Option<String>>,
    /// Enables or disables the cron.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// `delete` or `keep` (stateless crons).
    #[serde(default)]
    pub on_run_completed: Option<String>,
    /// Run fields replacing the payload's.
    #[serde(flatten)]
    pub payload: Map<String, Value>,
}

/// A field that is present, maybe null: `Some(None)` for null.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `POST /runs/crons/search`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronSearchParams {
    /// Only crons of this assistant (an id or a graph name).
    #[serde(default)]
    pub assistant_id: Option<String>,
    /// Only crons of this thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) crons.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Only crons whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Sort by this field (`created_at` when absent).
    #[serde(default)]
    pub sort_by: Option<CronSortBy>,
    /// `asc` or `desc` (the default).
    #[serde(default)]
    pub sort_order: Option<SortOrder>,
    /// Only these fields of each cron.
    #[serde(default)]
    pub select: Option<Vec<String>>,
}

/// `POST /runs/crons/count`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CronCountParams {
    /// Only crons of this assistant (an id or a graph name).
    #[serde(default)]
    pub assistant_id: Option<String>,
    /// Only crons of this thread.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Only crons whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// The Cron resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cron {
    /// The cron.
    pub cron_id: String,
    /// The assistant its runs use (an id or a graph name, as given).
    pub assistant_id: String,
    /// The thread its runs go to; null for a stateless cron.
    pub thread_id: Option<String>,
    /// Stateless crons: `delete` or `keep`; null for a thread's cron.
    pub on_run_completed: Option<String>,
    /// No run is created after this time.
    pub end_time: Option<DateTime<Utc>>,
    /// The cron expression.
    pub schedule: String,
    /// The IANA time zone it is read in; null is UTC.
    pub timezone: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// The run each firing creates, without its context (sealed, never
    /// echoed).
    pub payload: Map<String, Value>,
    /// Always null: crons belong to a tenant, not a user.
    pub user_id: Option<String>,
    /// When it fires next; null when disabled or past its end.
    pub next_run_date: Option<DateTime<Utc>>,
    /// Caller metadata (searchable).
    pub metadata: Map<String, Value>,
    /// Whether it fires.
    pub enabled: bool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_create_body_splits_into_the_schedule_and_the_run() {
        let body: CronCreateParams = serde_json::from_value(json!({
            "schedule": "0 9 * * *", "timezone": "Europe/Paris", "assistant_id": "agent",
            "input": {"messages": []}, "webhook": "https://example.com/hook"
        }))
        .unwrap();
        assert_eq!(body.timezone.as_deref(), Some("Europe/Paris"));
        assert_eq!(body.run.assistant_id, "agent");
        assert_eq!(
            body.run.rest.get("webhook"),
            Some(&json!("https://example.com/hook"))
        );
        assert!(!body.run.rest.contains_key("schedule"));
    }

    #[test]
    fn an_update_tells_a_cleared_end_time_from_an_absent_one() {
        let cleared: CronUpdateParams = serde_json::from_value(json!({"end_time": null})).unwrap();
        assert_eq!(cleared.end_time, Some(None));
        let absent: CronUpdateParams =
            serde_json::from_value(json!({"input": {"messages": []}})).unwrap();
        assert_eq!(absent.end_time, None);
        assert!(absent.payload.contains_key("input"));
    }
}
