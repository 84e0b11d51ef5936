//! What the search bodies share: a page size with its bound, an order,
//! and per resource the fields it sorts by. Each is checked as it is
//! read, so a value the API does not take never reaches a handler.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// A page's size, at most [`PageLimit::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(transparent)]
// Inline: a `limit` reads as the bounded integer it is.
#[schemars(inline)]
pub struct PageLimit(#[schemars(range(max = PageLimit::MAX))] usize);

impl PageLimit {
    /// The largest page a search or list answers: a page is held whole
    /// (each thread of it rendered with its state), so its size bounds
    /// what one request makes the server hold.
    pub const MAX: usize = 1_000;

    /// The size.
    pub fn get(self) -> usize {
        self.0
    }
}

/// A page size over [`PageLimit::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("at most {max} per page, not {0}; page with offset", max = PageLimit::MAX)]
pub struct PageTooLarge(pub usize);

impl TryFrom<usize> for PageLimit {
    type Error = PageTooLarge;

    fn try_from(size: usize) -> Result<Self, PageTooLarge> {
        if size > PageLimit::MAX {
            return Err(PageTooLarge(size));
        }
        Ok(PageLimit(size))
    }
}

impl<'de> Deserialize<'de> for PageLimit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let size = usize::deserialize(deserializer)?;
        PageLimit::try_from(size).map_err(serde::de::Error::custom)
    }
}

/// Which way a search sorts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Smallest (oldest) first.
    Asc,
    /// Largest (newest) first, the default.
    #[default]
    Desc,
}

/// The fields `POST /assistants/search` sorts by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantSortBy {
    /// The id.
    AssistantId,
    /// The graph it runs.
    GraphId,
    /// The display name.
    Name,
    /// When it was created; the default when only an order is given.
    #[default]
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
}

impl AssistantSortBy {
    /// The wire name, which is the Assistant resource's field.
    pub fn as_str(self) -> &'static str {
        match self {
            AssistantSortBy::AssistantId => "assistant_id",
            AssistantSortBy::GraphId => "graph_id",
            AssistantSortBy::Name => "name",
            AssistantSortBy::CreatedAt => "created_at",
            AssistantSortBy::UpdatedAt => "updated_at",
        }
    }
}

/// The fields `POST /threads/search` sorts by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadSortBy {
    /// The id.
    ThreadId,
    /// Its status.
    Status,
    /// When it was created; the default when only an order is given.
    #[default]
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
}

impl ThreadSortBy {
    /// The wire name, which is the Thread resource's field.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadSortBy::ThreadId => "thread_id",
            ThreadSortBy::Status => "status",
            ThreadSortBy::CreatedAt => "created_at",
            ThreadSortBy::UpdatedAt => "updated_at",
        }
    }
}

/// The fields `POST /runs/crons/search` sorts by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CronSortBy {
    /// The id.
    CronId,
    /// The assistant its runs use.
    AssistantId,
    /// The thread its runs go to.
    ThreadId,
    /// When it was created, the default.
    #[default]
    CreatedAt,
    /// When it last changed.
    UpdatedAt,
    /// When it fires next.
    NextRunDate,
    /// When it stops.
    EndTime,
}

impl CronSortBy {
    /// The wire name, which is the Cron resource's field.
    pub fn as_str(self) -> &'static str {
        match self {
            CronSortBy::CronId => "cron_id",
            CronSortBy::AssistantId => "assistant_id",
            CronSortBy::ThreadId => "thread_id",
            CronSortBy::CreatedAt => "created_at",
            CronSortBy::UpdatedAt => "updated_at",
            CronSortBy::NextRunDate => "next_run_date",
            CronSortBy::EndTime => "end_time",
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;

    fn read<T: DeserializeOwned>(value: Value) -> Result<T, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn a_page_is_bounded_as_it_is_read() {
        assert_eq!(read::<PageLimit>(json!(1000)).unwrap().get(), 1000);
        assert_eq!(read::<PageLimit>(json!(0)).unwrap().get(), 0);
        let over = read::<PageLimit>(json!(1001)).unwrap_err();
        assert!(over.contains("at most 1000 per page, not 1001"), "{over}");
        assert!(read::<PageLimit>(json!(-1)).is_err());
        assert!(read::<PageLimit>(json!("ten")).is_err());
        assert_eq!(
            serde_json::to_value(PageLimit::try_from(5).unwrap()).unwrap(),
            json!(5)
        );
    }

    #[test]
    fn sort_fields_and_orders_read_the_names_the_sdks_send() {
        assert_eq!(read::<SortOrder>(json!("asc")), Ok(SortOrder::Asc));
        assert_eq!(read::<SortOrder>(json!("desc")), Ok(SortOrder::Desc));
        assert!(read::<SortOrder>(json!("DESC")).is_err());
        assert!(read::<SortOrder>(json!("sideways")).is_err());
        for field in [
            ThreadSortBy::ThreadId,
            ThreadSortBy::Status,
            ThreadSortBy::CreatedAt,
            ThreadSortBy::UpdatedAt,
        ] {
            assert_eq!(read::<ThreadSortBy>(json!(field.as_str())), Ok(field));
        }
        for field in [
            AssistantSortBy::AssistantId,
            AssistantSortBy::GraphId,
            AssistantSortBy::Name,
            AssistantSortBy::CreatedAt,
            AssistantSortBy::UpdatedAt,
        ] {
            assert_eq!(read::<AssistantSortBy>(json!(field.as_str())), Ok(field));
        }
        for field in [
            CronSortBy::CronId,
            CronSortBy::AssistantId,
            CronSortBy::ThreadId,
            CronSortBy::CreatedAt,
            CronSortBy::UpdatedAt,
            CronSortBy::NextRunDate,
            CronSortBy::EndTime,
        ] {
            assert_eq!(read::<CronSortBy>(json!(field.as_str())), Ok(field));
        }
        let refused = read::<ThreadSortBy>(json!("values")).unwrap_err();
        assert!(refused.contains("unknown variant `values`"), "{refused}");
        assert!(read::<CronSortBy>(json!("schedule")).is_err());
    }
}
