//! A local server answering each request with the next canned answer
//! (recorded-shape JSON or SSE), recording path, headers and body; and the
//! transport settings every client under test uses.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::transport::TransportConfig;
use deepfleet_model::{DeltaEvent, DeltaSink};
use serde_json::Value;

/// Settings for a client of `base_url` sending `api_key`: a 5 s attempt
/// limit and retries 1 ms apart, so retry tests run fast.
pub fn config(base_url: String, api_key: Option<&str>, stream: bool) -> TransportConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    TransportConfig {
        api_key: api_key.map(str::to_owned),
        timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            base_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        },
        stream,
        ..TransportConfig::new(base_url)
    }
}

/// Serves `app` on a loopback port; returns `http://ADDRESS`.
pub async fn serve(app: Router) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

/// One canned answer.
pub struct Canned {
    pub status: u16,
    pub retry_after: Option<&'static str>,
    pub content_type: &'static str,
    pub body: String,
}

impl Canned {
    pub fn json(status: u16, body: Value) -> Canned {
        Canned {
            status,
            retry_after: None,
            content_type: "application/json",
            body: body.to_string(),
        }
    }

    /// An SSE body from `(event name, data)` pairs (`""` = no name).
    pub fn sse(events: &[(&str, Value)]) -> Canned {
        let mut body = String::new();
        for (name, data) in events {
            if !name.is_empty() {
                body.push_str(&format!("event: {name}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Canned::sse_text(body)
    }

    pub fn sse_text(body: String) -> Canned {
        Canned {
            status: 200,
            retry_after: None,
            content_type: "text/event-stream",
            body,
        }
    }

    pub fn retry_after(mut self, value: &'static str) -> Canned {
        self.retry_after = Some(value);
        self
    }
}

/// One received request.
#[derive(Debug, Clone)]
pub struct Received {
    /// Path and query.
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Recorded {
    answers: VecDeque<Canned>,
    requests: Vec<Received>,
}

pub struct Server {
    pub root: String,
    state: Arc<Mutex<Recorded>>,
}

impl Server {
    pub async fn start(answers: Vec<Canned>) -> Server {
        let state = Arc::new(Mutex::new(Recorded {
            answers: answers.into(),
            requests: Vec::new(),
        }));
        let app = Router::new().fallback(answer).with_state(state.clone());
        Server {
            root: serve(app).await,
            state,
        }
    }

    pub fn requests(&self) -> Vec<Received> {
        self.state.lock().unwrap().requests.clone()
    }
}

async fn answer(
    State(state): State<Arc<Mutex<Recorded>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock().unwrap();
    state.requests.push(Received {
        uri: uri.to_string(),
        headers,
        body: serde_json::from_slice(&body).unwrap(),
    });
    let canned = state.answers.pop_front().expect("an answer is left");
    let mut response = (
        StatusCode::from_u16(canned.status).unwrap(),
        [(header::CONTENT_TYPE, canned.content_type)],
        canned.body,
    )
        .into_response();
    if let Some(value) = canned.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, value.parse().unwrap());
    }
    response
}

/// A sink keeping every delta.
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<DeltaEvent>>);

impl DeltaSink for Collect {
    fn deliver(&self, event: DeltaEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl Collect {
    pub fn events(&self) -> Vec<DeltaEvent> {
        self.0.lock().unwrap().clone()
    }
}
