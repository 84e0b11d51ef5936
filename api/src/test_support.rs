//! The router tests' fixture: the whole API router over the embedded
//! store and the in-process queue, called with tower's `oneshot` (no
//! servers), and a stand-in worker that ends runs the way a step commit
//! does.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body as HttpBody;
use axum::http::{HeaderMap, Request, StatusCode, header};
use chrono::Utc;
use deepfleet_proto::api::MultitaskStrategy;
use deepfleet_proto::hitl::{ActionRequest, DecisionType, Interrupt, ReviewConfig};
use deepfleet_proto::{
    AgentSpec, Envelope, Job, LoggedMessage, Message, PendingTools, Role, RunError, RunEvent,
    RunStatus, StepJob, TenantId,
};
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_store::{StepCommit, Store};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::browser_guard::AllowedHosts;
use crate::{ApiState, router};
use deepfleet_scheduler::Intake;
use deepfleet_scheduler::keys::{ApiKeys, key_line};
use deepfleet_scheduler::lifecycle::Lifecycle;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::runs::Runs;
use deepfleet_scheduler::webhooks::backoff::Backoff;
use deepfleet_scheduler::webhooks::{Secret, WebhookConfig};

/// The graph the fixture serves.
pub const GRAPH: &str = "agent";

/// The API under test and what it runs on.
pub struct TestApi {
    /// The router with its layers.
    pub router: Router,
    /// What handlers share.
    pub state: ApiState,
    /// The store behind it.
    pub store: Arc<dyn Store>,
    /// The same store, as what it is.
    pub embedded: Arc<EmbeddedStore>,
    /// The step queue runs are published to.
    pub queue: Arc<MemoryQueue>,
}

/// A response, read whole.
#[derive(Debug)]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub text: String,
}

impl Answer {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// A header's value.
    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The default tenant's webhook signing secret.
pub const WEBHOOK_SECRET: &str = "test secret";

/// The API serving [`GRAPH`], on fresh embedded back ends, open (no
/// keys).
pub async fn api() -> TestApi {
    api_with(ApiKeys::open(), None).await
}

/// The open API answering host names `hosts` besides the loopback ones
/// (`api.allowed_hosts`), for the tests that call it by another name.
pub async fn api_allowing(hosts: &[&str]) -> TestApi {
    let mut api = api().await;
    api.state.allowed_hosts = AllowedHosts::parse(hosts).unwrap();
    api.router = router(api.state.clone());
    api
}

/// The API serving [`GRAPH`] with `keys`, each tenant allowed `in_flight`
/// runs at once.
pub async fn api_with(keys: ApiKeys, in_flight: Option<u32>) -> TestApi {
    let embedded = Arc::new(EmbeddedStore::new());
    let store: Arc<dyn Store> = embedded.clone();
    let queue = Arc::new(MemoryQueue::new());
    let steps: Arc<dyn Queue> = queue.clone();
    // The default tenant signs webhooks, other tenants have no secret;
    // a failed attempt may be retried at once, twice.
    let mut webhooks = WebhookConfig::default()
        .with_secret(TenantId::default(), Secret::parse(WEBHOOK_SECRET).unwrap());
    webhooks.max_attempts = 3;
    // Receivers in these tests listen on loopback.
    webhooks.allow_private = true;
    webhooks.backoff = Backoff {
        initial: Duration::ZERO,
        max: Duration::ZERO,
    };
    let intake = Intake::new(Arc::clone(&store), steps)
        .with_context_key(ContextKey::generate())
        .with_webhooks(webhooks);
    let spec = AgentSpec::from_yaml(&format!("name: {GRAPH}\nmodel: openai:x\n")).unwrap();
    intake.register(&spec).await.unwrap();
    let state = ApiState {
        runs: Runs {
            life: Lifecycle::new(intake),
            graphs: deepfleet_scheduler::runs::Graphs::new([GRAPH.to_owned()]),
            started_at: Utc::now(),
            tenant_runs_in_flight: in_flight,
        },
        metrics: None,
        keys,
        max_body_bytes: crate::BODY_LIMIT,
        allowed_hosts: Default::default(),
    };
    TestApi {
        router: router(state.clone()),
        state,
        store,
        embedded,
        queue,
    }
}

/// Tenant `a`'s key in [`two_tenants`].
pub const KEY_A: &str = "key-a";
/// Tenant `b`'s key in [`two_tenants`].
pub const KEY_B: &str = "key-b";

/// The API with two admin keys, [`KEY_A`] of tenant `a` and [`KEY_B`] of
/// tenant `b`: for the tests that a tenant never sees another's records.
pub async fn two_tenants() -> TestApi {
    let lines = [
        key_line(KEY_A, &TenantId::new("a").unwrap(), Role::Admin),
        key_line(KEY_B, &TenantId::new("b").unwrap(), Role::Admin),
    ];
    let keys = ApiKeys::parse(lines.iter().map(|l| ("test", l.as_str()))).unwrap();
    api_with(keys, None).await
}

/// A run `r` on thread `t`, for the units that take run metadata.
pub fn sample_meta() -> RunMeta {
    RunMeta {
        run_id: "r".into(),
        thread_id: "t".into(),
        tenant: Default::default(),
        assistant_id: "a".into(),
        graph_id: "g".into(),
        metadata: Default::default(),
        kwargs: Default::default(),
        multitask_strategy: MultitaskStrategy::Enqueue,
        batch_id: None,
        input: vec![],
        files: Default::default(),
        context: None,
        cancelled: false,
        not_before: None,
        rewind: None,
        priority: Default::default(),
        created_at: Utc::now(),
    }
}

/// A request to `/mcp` as `key` carrying the JSON-RPC `body`, with the
/// headers the streamable HTTP transport wants.
pub fn mcp_request(key: &str, body: &Value) -> Request<HttpBody> {
    Request::builder()
        .method("POST")
        .uri("/mcp")
        .header(header::HOST, "127.0.0.1:2024")
        .header("x-api-key", key)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(HttpBody::from(body.to_string()))
        .unwrap()
}

/// A JSON run request for [`GRAPH`] saying `text`.
pub fn run_body(text: &str) -> Value {
    json!({"assistant_id": GRAPH, "input": {"messages": [{"role": "user", "content": text}]}})
}

impl TestApi {
    /// Sends a request with an optional JSON body.
    pub async fn send(&self, method: &str, uri: &str, body: Option<Value>) -> Answer {
        self.send_as(None, method, uri, body).await
    }

    /// Sends a request presenting API key `key` (as `x-api-key`).
    pub async fn send_as(
        &self,
        key: Option<&str>,
        method: &str,
        uri: &str,
        body: Option<Value>,
    ) -> Answer {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(key) = key {
            builder = builder.header("x-api-key", key);
        }
        let request = match body {
            Some(body) => builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(HttpBody::from(body.to_string())),
            None => builder.body(HttpBody::empty()),
        };
        self.raw(request.unwrap()).await
    }

    /// Sends a prepared request.
    pub async fn raw(&self, request: Request<HttpBody>) -> Answer {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        Answer {
            status,
            headers,
            text: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    /// The runtime context, opened, of the run `run` (a Run resource's
    /// answer) started.
    pub async fn run_context(&self, run: &Answer) -> Value {
        let run = run.json();
        let (thread, run_id) = (run["thread_id"].as_str(), run["run_id"].as_str());
        let record = self
            .store
            .get_run(thread.unwrap(), run_id.unwrap())
            .await
            .unwrap()
            .unwrap();
        self.state
            .runs
            .life
            .intake()
            .open_context(record.context.as_ref().unwrap())
            .unwrap()
    }

    /// Creates thread `thread_id` as the tenant of API key `key`.
    pub async fn thread_as(&self, key: &str, thread_id: &str) {
        let body = json!({"thread_id": thread_id});
        let created = self
            .send_as(Some(key), "POST", "/threads", Some(body))
            .await;
        assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    }

    /// Creates a thread and returns its id.
    pub async fn thread(&self) -> String {
        let answer = self.send("POST", "/threads", Some(json!({}))).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        answer.json()["thread_id"].as_str().unwrap().to_owned()
    }

    /// Starts a background run on `thread_id` and returns the Run.
    pub async fn run_on(&self, thread_id: &str, body: Value) -> Value {
        let answer = self
            .send("POST", &format!("/threads/{thread_id}/runs"), Some(body))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        answer.json()
    }

    /// A thread with two runs (inputs `hi` and `again`), each ended by one
    /// step: checkpoints 1 and 2. Returns the thread's and the runs' ids.
    pub async fn two_runs(&self) -> (String, [String; 2]) {
        let thread_id = self.thread().await;
        let mut runs = Vec::new();
        for text in ["hi", "again"] {
            let run = self.run_on(&thread_id, run_body(text)).await;
            let run_id = run["run_id"].as_str().unwrap().to_owned();
            finish(self.store.as_ref(), &thread_id, &run_id, RunStatus::Success).await;
            runs.push(run_id);
        }
        let [first, second] = <[String; 2]>::try_from(runs).unwrap();
        (thread_id, [first, second])
    }

    /// Creates a thread with one run that ended with `status`; returns the
    /// thread's and the run's ids.
    pub async fn ended_run(&self, status: RunStatus) -> (String, String) {
        let thread_id = self.thread().await;
        let run = self.run_on(&thread_id, run_body("hi")).await;
        let run_id = run["run_id"].as_str().unwrap().to_owned();
        finish(self.store.as_ref(), &thread_id, &run_id, status).await;
        (thread_id, run_id)
    }

    /// Takes the next step job off the queue, as a worker would, and ends
    /// its run with `status`.
    pub async fn work_one(&self, status: RunStatus) -> StepJob {
        let mut consumer = self.queue.consume(1).await.unwrap();
        let delivery = consumer.next().await.unwrap().unwrap();
        let envelope: Envelope = serde_json::from_slice(delivery.payload()).unwrap();
        delivery.ack().await.unwrap();
        let Job::Step(job) = envelope.job else {
            panic!("a step message was expected");
        };
        finish(self.store.as_ref(), &job.thread_id, &job.run_id, status).await;
        job
    }
}

/// The contents of a state's messages, in order (text messages only).
pub fn message_texts(state: &Value) -> Vec<String> {
    state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Ends a started run as its last step's commit does: the model's answer
/// `done` joins the log, the run gets `status` (a failure for `Error`, a
/// pending review for `Interrupted`) and its followers an event.
pub async fn finish(store: &dyn Store, thread_id: &str, run_id: &str, status: RunStatus) {
    let mut run = store.get_run(thread_id, run_id).await.unwrap().unwrap();
    let checkpoint = store.load_thread(thread_id).await.unwrap();
    run.status = status;
    run.steps = 1;
    run.output = Some("done".into());
    run.updated_at = Utc::now();
    run.error = (status == RunStatus::Error).then(|| RunError {
        code: deepfleet_proto::ErrorCode::ModelUnavailable,
        message: "the model is down".into(),
    });
    let pending = (status == RunStatus::AwaitingHuman).then(|| PendingTools {
        calls: Vec::new(),
        children: Vec::new(),
        interrupt: Some(review()),
    });
    let from = checkpoint.messages.len() as u64;
    let commit = StepCommit {
        thread_id: thread_id.to_owned(),
        step: checkpoint.step,
        messages: vec![LoggedMessage {
            message: Message::assistant("done"),
            tokens: 1,
        }],
        files: Default::default(),
        state: None,
        pending,
        run,
        fan_in_expected: None,
        context: None,
    };
    store.commit_step(&commit).await.unwrap();
    let event = RunEvent {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        step: checkpoint.step,
        status,
        from,
        to: from + 1,
        namespace: Vec::new(),
    };
    store.append_run_event(run_id, &event).await.unwrap();
}

/// The review a run parked by [`finish`] waits on.
pub fn review() -> Interrupt {
    Interrupt {
        action_requests: vec![ActionRequest {
            name: "write_file".into(),
            args: json!({"path": "/a.md"}),
            description: "Write /a.md".into(),
            tool_call_id: "call-1".into(),
        }],
        review_configs: vec![ReviewConfig {
            action_name: "write_file".into(),
            allowed_decisions: DecisionType::ALL.to_vec(),
        }],
        decisions: None,
    }
}
