//! What `POST /runs/crons/search` and `/count` filter and sort by, as
//! the reference names them (what a search answers with is
//! [`super::select`]).

use std::cmp::Ordering;

use deepfleet_proto::api::Cron;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::search::metadata_matches;
use crate::repo::crons::CronRecord;

/// Which crons a search or count keeps.
pub struct Filter {
    /// Only this assistant's (as the cron names it).
    pub assistant_id: Option<String>,
    /// Only this thread's.
    pub thread_id: Option<String>,
    /// Only enabled (or disabled) ones.
    pub enabled: Option<bool>,
    /// Only those whose metadata holds these pairs.
    pub metadata: Option<Map<String, Value>>,
}

impl Filter {
    /// Whether `cron` passes.
    pub fn matches(&self, cron: &CronRecord) -> bool {
        self.assistant_id
            .as_ref()
            .is_none_or(|a| *a == cron.payload.assistant_id)
            && self
                .thread_id
                .as_ref()
                .is_none_or(|t| cron.thread_id.as_ref() == Some(t))
            && self.enabled.is_none_or(|e| e == cron.enabled)
            && metadata_matches(self.metadata.as_ref(), &cron.metadata)
    }
}

/// A search's order: a field and a direction.
pub struct SortBy {
    field: String,
    descending: bool,
}

impl SortBy {
    /// `sort_by` (default `created_at`) and `sort_order` (default
    /// `desc`); anything else is 422.
    pub fn parse(field: Option<&str>, order: Option<&str>) -> Result<Self, ApiError> {
        let field = field.unwrap_or("created_at");
        let sortable = [
            "cron_id",
            "assistant_id",
            "thread_id",
            "created_at",
            "updated_at",
            "next_run_date",
            "end_time",
        ];
        if !sortable.contains(&field) {
            return Err(ApiError::unprocessable(format!(
                "sort_by must be one of {}; got '{field}'",
                sortable.join(", ")
            )));
        }
        let descending = match order {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(other) => {
                return Err(ApiError::unprocessable(format!(
                    "sort_order must be asc or desc; got '{other}'"
                )));
            }
        };
        Ok(SortBy {
            field: field.to_owned(),
            descending,
        })
    }

    /// Sorts `crons`; nulls come last either way, ties by id.
    pub fn sort(&self, crons: &mut [Cron]) {
        crons.sort_by(|a, b| {
            let order = match (self.key(a), self.key(b)) {
                (Some(x), Some(y)) if self.descending => y.cmp(&x),
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            };
            order.then_with(|| a.cron_id.cmp(&b.cron_id))
        });
    }

    /// The sort key: ids as text, times as RFC 3339 in UTC (which sorts
    /// as time does).
    fn key(&self, cron: &Cron) -> Option<String> {
        let time = |t: Option<chrono::DateTime<chrono::Utc>>| {
            t.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
        };
        match self.field.as_str() {
            "cron_id" => Some(cron.cron_id.clone()),
            "assistant_id" => Some(cron.assistant_id.clone()),
            "thread_id" => cron.thread_id.clone(),
            "updated_at" => time(Some(cron.updated_at)),
            "next_run_date" => time(cron.next_run_date),
            "end_time" => time(cron.end_time),
            _ => time(Some(cron.created_at)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_are_checked() {
        assert!(SortBy::parse(Some("next_run_date"), Some("asc")).is_ok());
        assert!(SortBy::parse(Some("schedule"), None).is_err());
        assert!(SortBy::parse(None, Some("up")).is_err());
    }
}
