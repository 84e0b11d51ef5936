//! `GET /threads/{id}/stream`: following a thread rather than one run.
//! The run occupying the thread when the client comes, and each run
//! created on it while the client listens, is followed in turn, oldest
//! first, from its `metadata` event to its end, as its own stream would
//! be; between runs the stream sends heartbeats. It ends when the client
//! leaves, the thread is deleted, or after [`THREAD_STREAM_LIMIT`] (a
//! client reconnects to go on), so no follower outlives its use.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use deepfleet_proto::Caller;
use deepfleet_proto::api::{RunStreamQuery, StreamMode};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::error::{ApiError, QueryString};
use crate::routes::{READ, Routes};
use crate::runs::follower::{Sink, follow};
use crate::state::ApiState;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::repo::threads::threads;
use deepfleet_scheduler::runs::follow::{Outbox, POLL, Stopped};
use deepfleet_scheduler::runs::modes::Modes;
use deepfleet_scheduler::runs::thread_runs::runs_since;
use deepfleet_scheduler::runs::threads::load;

/// How long one thread stream lasts at most.
pub const THREAD_STREAM_LIMIT: Duration = Duration::from_secs(3600);

/// Runs followed by one stream are remembered so that none is followed
/// twice; past this many, the oldest are forgotten (they ended long ago,
/// and a walk stops before reaching them).
const REMEMBERED_RUNS: usize = 1024;

pub(crate) fn routes() -> Routes {
    Routes::new().get("/threads/{thread_id}/stream", READ, thread_stream)
}

async fn thread_stream(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    QueryString(query): QueryString<RunStreamQuery>,
) -> Result<Response, ApiError> {
    let record = load(&state.runs, &caller.tenant, &thread_id).await?;
    let mode = query.stream_mode.map(StreamMode::One);
    if query.cancel_on_disconnect.is_some() {
        return Err(ApiError::unprocessable(
            "cancel_on_disconnect applies to one run's stream, not a thread's",
        ));
    }
    let mut modes = ThreadModes::parse(mode.as_ref())?;
    modes.subgraphs = query
        .stream_subgraphs
        .is_some_and(|v| v == "true" || v == "1");
    // Taken now, not once the follower starts: a run created right after
    // the answer is followed too.
    let since = match state.runs.life.active_run(&record).await? {
        Some(run) => run.created_at.min(Utc::now()),
        None => Utc::now(),
    };
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(64);
    let thread_id = record.thread_id;
    tokio::spawn(async move {
        let deadline = Instant::now() + THREAD_STREAM_LIMIT;
        let mut out = Outbox::new(tx);
        let following = follow_thread(&state, &thread_id, since, modes, &mut out);
        let _ = tokio::time::timeout_at(deadline, following).await;
    });
    let events =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) });
    Ok(Sse::new(events).into_response())
}

/// What a thread stream sends of each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ThreadModes {
    /// `run_modes` (the default): each run's own stream modes, as its
    /// creator asked for them (`values` when it asked for none).
    run_modes: bool,
    /// Modes asked for every run: `state_update` is `values`; a run's
    /// own mode names are taken as they are.
    extra: Modes,
    subgraphs: bool,
}

impl ThreadModes {
    /// Parses a thread stream's `stream_mode` (default `run_modes`).
    fn parse(value: Option<&StreamMode>) -> Result<ThreadModes, ApiError> {
        let names = value.map_or_else(|| vec!["run_modes"], StreamMode::names);
        let mut run_modes = false;
        let mut extra = Vec::new();
        for name in names {
            match name {
                "run_modes" => run_modes = true,
                "state_update" => extra.push("values".to_owned()),
                "lifecycle" => {
                    return Err(ApiError::unprocessable(
                        "stream_mode 'lifecycle' is not supported yet; each run's stream \
                         starts with its metadata event",
                    ));
                }
                other => extra.push(other.to_owned()),
            }
        }
        let extra = if extra.is_empty() {
            Modes::default()
        } else {
            Modes::parse(Some(&StreamMode::Many(extra)))?
        };
        Ok(ThreadModes {
            run_modes,
            extra,
            subgraphs: false,
        })
    }

    /// The modes `meta` is followed with.
    fn for_run(&self, meta: &RunMeta) -> Modes {
        let own = if self.run_modes {
            let asked: Option<StreamMode> = meta
                .kwargs
                .get("stream_mode")
                .and_then(|v| serde_json::from_value(v.clone()).ok());
            // A run's modes were checked when it was created.
            Modes::parse(asked.as_ref()).unwrap_or(Modes {
                values: true,
                ..Modes::default()
            })
        } else {
            Modes::default()
        };
        let mut modes = own.union(self.extra);
        modes.subgraphs = self.subgraphs || own.subgraphs;
        modes
    }
}

/// Follows each run created on `thread_id` since `since` (and the run
/// occupying it then), oldest first, until the client leaves or the
/// thread is gone (`Ok`); each run is followed by the runs service's
/// follower with the run stream's wire.
async fn follow_thread(
    state: &ApiState,
    thread_id: &str,
    since: DateTime<Utc>,
    modes: ThreadModes,
    out: &mut Sink,
) -> Result<(), Stopped> {
    let store = state.store();
    let mut followed: VecDeque<String> = VecDeque::new();
    loop {
        if out.is_closed() {
            return Err(Stopped::ClientGone);
        }
        if threads(store).get(thread_id).await?.is_none() {
            return Ok(());
        }
        let news = runs_since(&state.runs, thread_id, since, &followed).await?;
        if news.is_empty() {
            if out.keep_alive_due() {
                out.send(Ok(Event::default().comment("heartbeat"))).await?;
            }
            tokio::time::sleep(POLL).await;
            continue;
        }
        for meta in news {
            if followed.len() == REMEMBERED_RUNS {
                followed.pop_front();
            }
            followed.push_back(meta.run_id.clone());
            match follow(state, &meta, modes.for_run(&meta), None, out).await {
                Stopped::Ended(_) | Stopped::Answered => {}
                stopped => return Err(stopped),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use deepfleet_proto::RunStatus;
    use deepfleet_proto::api::StreamMode;
    use serde_json::json;

    use super::{Modes, ThreadModes};
    use crate::test_support::sample_meta;

    #[test]
    fn by_default_each_run_streams_in_its_own_modes() {
        let modes = ThreadModes::parse(None).unwrap();
        let mut meta = sample_meta();
        meta.kwargs
            .insert("stream_mode".into(), json!(["updates", "messages-tuple"]));
        let followed = modes.for_run(&meta);
        assert!(followed.updates && followed.messages_tuple && !followed.values);
        meta.kwargs.remove("stream_mode");
        assert_eq!(
            modes.for_run(&meta),
            Modes {
                values: true,
                ..Modes::default()
            }
        );
        let updates = ThreadModes::parse(Some(&StreamMode::One("state_update".into()))).unwrap();
        assert!(updates.for_run(&meta).values);
        assert!(ThreadModes::parse(Some(&StreamMode::One("lifecycle".into()))).is_err());
    }

    use crate::test_support::{api, run_body};

    #[tokio::test]
    async fn a_thread_stream_follows_each_run_on_the_thread_in_turn() {
        use axum::body::Body as HttpBody;
        use axum::http::Request;
        use futures::StreamExt;
        use tower::ServiceExt;

        let api = api().await;
        let thread_id = api.thread().await;
        let request = Request::builder()
            .uri(format!("/threads/{thread_id}/stream?stream_mode=updates"))
            .body(HttpBody::empty())
            .unwrap();
        let response = api.router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let mut body = response.into_body().into_data_stream();
        let mut text = String::new();
        for n in 0..2 {
            api.run_on(&thread_id, run_body(&format!("run {n}"))).await;
            api.work_one(RunStatus::Success).await;
            // Read until this run's answer came.
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
            while text.matches("\"done\"").count() <= n {
                let chunk = tokio::time::timeout_at(deadline, body.next())
                    .await
                    .expect("the run's events in time")
                    .unwrap()
                    .unwrap();
                text.push_str(&String::from_utf8_lossy(&chunk));
            }
        }
        assert_eq!(text.matches("event: metadata").count(), 2, "{text}");
        drop(body);

        let missing = api.send("GET", "/threads/nope/stream", None).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        let bad = api
            .send(
                "GET",
                &format!("/threads/{thread_id}/stream?stream_mode=nope"),
                None,
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
    }
}
