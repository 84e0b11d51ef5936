//! Waiting for a run: `/wait` and `/join` answer a JSON body once the run
//! ends, with whitespace keep-alives meanwhile (reference §1.7). The run
//! is followed by the runs service's one follower; this is its wire.

use std::convert::Infallible;

use axum::body::{Body as HttpBody, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use deepfleet_proto::RunStatus;
use deepfleet_proto::api::{RunFailure, WaitErrorResponse};
use deepfleet_scheduler::convert::to_json;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::follow::{self, Gone, Look, Outbox, START, Stopped, Wire};
use deepfleet_scheduler::runs::{Runs, final_body};
use tokio::sync::mpsc;
use tracing::warn;

use crate::error::ApiError;
use crate::runs::headers::run_headers;
use crate::state::ApiState;

/// A 200 whose body is newlines every
/// [`KEEP_ALIVE`](follow::KEEP_ALIVE) until the run ends, then its final
/// JSON; `Location` is the join URL.
pub async fn wait_response(state: ApiState, meta: RunMeta, location: &str) -> Response {
    let headers = run_headers(&meta, Some(location));
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(4);
    tokio::spawn(async move {
        let runs = &state.runs;
        let mut wire = WaitWire {
            runs,
            meta: &meta,
            out: Outbox::new(tx),
        };
        let mut cursor = START.to_owned();
        if let Stopped::Failed(e) = follow::follow(runs, &meta, &mut cursor, &mut wire).await {
            // The client reads the failure as the body.
            let _ = wire.out.send(Ok(Bytes::from(error_json(&e.into())))).await;
        }
    });
    let body = HttpBody::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }));
    (headers, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A wait's wire: newlines while the run goes on, its final body once it
/// ended.
struct WaitWire<'a> {
    runs: &'a Runs,
    meta: &'a RunMeta,
    out: Outbox<Result<Bytes, Infallible>>,
}

impl Wire for WaitWire<'_> {
    fn reads_steps(&self) -> bool {
        false
    }

    fn gone(&self) -> bool {
        self.out.is_closed()
    }

    async fn look(&mut self, _: &Look) -> Result<(), Stopped> {
        Ok(())
    }

    async fn quiet(&mut self) -> Result<(), Gone> {
        if self.out.keep_alive_due() {
            self.out.send(Ok(Bytes::from_static(b"\n"))).await?;
        }
        Ok(())
    }

    async fn ended(&mut self, _: Option<RunStatus>) -> Result<(), Stopped> {
        let body = match final_body(self.runs, self.meta).await {
            Ok(body) => body.to_json().to_string(),
            Err(e) => error_json(&e.into()),
        };
        self.out.send(Ok(Bytes::from(body))).await?;
        // Answered: a stateless run's thread goes now (else its expiry
        // takes it).
        if let Err(e) = self.runs.life.dispose_temporary(self.meta).await {
            warn!(error = %e, run_id = %self.meta.run_id, "removing a stateless run's thread");
        }
        Ok(())
    }
}

fn error_json(e: &ApiError) -> String {
    let body = WaitErrorResponse {
        error: RunFailure {
            error: e.code.as_str().to_owned(),
            message: e.detail.clone(),
        },
    };
    to_json(&body).to_string()
}
