//! HTTP tools (`http_tools` in the spec) against a local service: a call
//! whose arguments break the schema is refused before any request; an
//! argument that tries to steer the URL to another host reaches only the
//! declared one; a 500, a timeout and an oversized answer are errors the
//! model reads and the run goes on; a context field mapped to a header and
//! a body field arrives as declared, a secret from the sealed context too,
//! and the answer's `state_update` shows in the thread's state. A run
//! whose context breaks the spec's `context_schema` is refused at intake.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::get;
use deepfleet_proto::{Message, TaskLine};
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use serde_json::{Value, json};

use crate::support::{replay_model, scenario, spec, task};

/// What the service saw: one line per request.
type Seen = Arc<Mutex<Vec<String>>>;

async fn ticket(
    State(seen): State<Seen>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> axum::Json<Value> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-")
            .to_owned()
    };
    seen.lock().unwrap().push(format!(
        "ticket {key} user={} auth={}",
        header("x-user"),
        header("authorization")
    ));
    // Only one answer updates state: the turn's calls run side by side.
    if key == "OPS-7" {
        return axum::Json(json!({
            "key": key,
            "title": "Disk full",
            "state_update": {"ticket": key, "unlisted": true}
        }));
    }
    axum::Json(json!({"key": key, "title": "Unknown"}))
}

/// The service, on a free port; the base URL.
async fn service(seen: Seen) -> String {
    let app = Router::new()
        .route("/tickets/{key}", get(ticket))
        .route(
            "/notes",
            axum::routing::post(|State(seen): State<Seen>, body: String| async move {
                seen.lock().unwrap().push(format!("note {body}"));
                "noted"
            }),
        )
        .route(
            "/fail",
            get(|| async {
                (
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "the database is down",
                )
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                "late"
            }),
        )
        .route("/big", get(|| async { "x".repeat(10_000) }))
        .with_state(seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// A listener that counts connections: the host an argument tries to
/// reach.
async fn elsewhere() -> (String, Arc<Mutex<usize>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let hits = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&hits);
    tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            *counted.lock().unwrap() += 1;
        }
    });
    (addr, hits)
}

fn tools(base: &str) -> String {
    format!(
        r#"
context_secrets: [TICKETS_TOKEN]
context_schema:
  type: object
  required: [user]
  properties:
    user: {{type: object, required: [id], properties: {{id: {{type: string}}}}}}
state_schema:
  type: object
  properties:
    ticket: {{type: string}}
http_tools:
  - name: lookup_ticket
    description: Looks a ticket up by its key.
    parameters: {{type: object, required: [key], properties: {{key: {{type: string}}}}}}
    url: "{base}/tickets/{{key}}"
    headers:
      Authorization: {{secret: TICKETS_TOKEN}}
      X-User: {{context: user.id}}
    updates_state: [ticket]
  - name: add_note
    description: Adds a note.
    method: POST
    parameters: {{type: object, properties: {{text: {{type: string}}}}}}
    url: "{base}/notes"
    fields:
      author: {{context: user.id}}
  - name: failing
    description: Always fails.
    url: "{base}/fail"
    retries: 1
  - name: slow
    description: Answers too late.
    url: "{base}/slow"
    timeout_secs: 1
    retries: 0
  - name: big
    description: Answers too much.
    url: "{base}/big"
    max_response_bytes: 1000
"#
    )
}

fn script(elsewhere: &str) -> String {
    ScriptBuilder::new()
        .call(
            When::at_turn(0),
            [
                Call::new("lookup_ticket", json!({"key": 42})),
                Call::new("lookup_ticket", json!({"key": format!("x@{elsewhere}")})),
                Call::new("lookup_ticket", json!({"key": format!("//{elsewhere}/")})),
                Call::new("lookup_ticket", json!({"key": "OPS-7"})),
            ],
        )
        .call(
            When::at_turn(1),
            [
                Call::new("add_note", json!({"text": "seen"})),
                Call::new("failing", json!({})),
                Call::new("slow", json!({})),
                Call::new("big", json!({})),
            ],
        )
        .answer(When::at_turn(2), "done")
        .build()
}

fn with_context(context: Value) -> TaskLine {
    TaskLine {
        context: Some(context),
        ..task("t1", "look it up")
    }
}

scenario!(http_tools_call_a_service, |fleet| {
    let seen: Seen = Arc::default();
    let base = service(Arc::clone(&seen)).await;
    let (other, hits) = elsewhere().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        "ticketing",
        &replay_model(dir.path(), &script(&other)),
        &tools(&base),
    );
    let context = json!({"user": {"id": "u-17"}, "TICKETS_TOKEN": "Bearer tok-1"});
    let batch = fleet
        .run_batch(&spec, &[with_context(context)])
        .await
        .unwrap();
    let result = &batch.results[0];
    assert_eq!(result.error, None);
    assert_eq!(result.output, "done");

    let thread = fleet
        .store
        .load_thread(&batch.runs[0].thread_id)
        .await
        .unwrap();
    let answers: Vec<String> = thread
        .messages
        .iter()
        .filter(|m| matches!(m.message, Message::Tool(_)))
        .map(|m| m.message.text())
        .collect();
    assert_eq!(answers.len(), 8, "{answers:#?}");
    assert!(
        answers[0].starts_with(
            "Error: invalid arguments for tool `lookup_ticket`: /key: 42 is not of type \"string\""
        ),
        "{}",
        answers[0]
    );
    assert_eq!(
        answers[3],
        "{\"key\":\"OPS-7\",\"title\":\"Disk full\"}\n[state updated: ticket]\n[state_update ignored: unlisted (not in updates_state)]"
    );
    assert_eq!(answers[4], "noted");
    assert!(
        answers[5].starts_with(
            "Error: failing answered HTTP 500 Internal Server Error: the database is down"
        ),
        "{}",
        answers[5]
    );
    assert_eq!(answers[6], "Error: slow: no answer within 1 s");
    assert_eq!(
        answers[7],
        "Error: big: the answer is larger than the tool's max_response_bytes (1000)"
    );
    assert_eq!(thread.state["ticket"], "OPS-7");

    // The hostile keys reached the declared service, encoded, never the
    // other host; the schema-breaking call reached nothing.
    assert_eq!(*hits.lock().unwrap(), 0);
    // A turn's calls run side by side, so their order is not the turn's.
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    let lookup = |key: &str| format!("ticket {key} user=u-17 auth=Bearer tok-1");
    let mut expected = vec![
        lookup(&format!("x@{other}")),
        lookup(&format!("//{other}/")),
        lookup("OPS-7"),
        r#"note {"author":"u-17","text":"seen"}"#.to_owned(),
    ];
    expected.sort();
    assert_eq!(seen, expected);

    // The context schema holds at intake.
    let refused = fleet
        .run(&spec, &[with_context(json!({"user": {"name": "no id"}}))])
        .await
        .unwrap_err();
    let refused = format!("{refused:#}");
    assert!(
        refused.contains("context.user: \"id\" is a required property"),
        "{refused}"
    );
});
