//! Tool-call ids a model gets wrong: calls of one turn sharing an id, and
//! calls with an empty id. Each call must still get its own result, and a
//! parent that delegated under such ids must hear from every subagent and
//! finish (issue 14: it waited forever on the one result the twins
//! shared). Run on both modes, and through each wire protocol.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_model::ProviderConfig;
use deepfleet_proto::{ResultLine, ResultStatus};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{Call, ScriptBuilder, When, write_task};
use pretty_assertions::assert_eq;

use crate::support::{Fleet, distributed, fleet, replay_model, spec, task};

/// A hang shows as a failure in this time, not after the suite's limit.
const LIMIT: Duration = Duration::from_secs(60);

/// Two subagents under one id and one under an empty id, then two writes
/// sharing an id and one with none; the parent then lists the files and
/// answers with the listing.
fn script() -> String {
    let split = When::input("^Split under one id$");
    ScriptBuilder::new()
        .call(
            split.clone().turn(0),
            [
                Call::task(&write_task("alpha", "/a.txt")).with_id("dup"),
                Call::task(&write_task("beta", "/b.txt")).with_id("dup"),
                Call::task(&write_task("gamma", "/c.txt")).with_id(""),
            ],
        )
        .call(
            split.clone().turn(1),
            [
                Call::write_file("/d.txt", "delta").with_id("w"),
                Call::write_file("/e.txt", "epsilon").with_id("w"),
                Call::write_file("/f.txt", "zeta").with_id(""),
            ],
        )
        .call(split.clone().turn(2), [Call::ls("/")])
        .answer(split.turn(3), "{{last_tool}}")
        .writing_subagents()
        .build()
}

fn assert_finished(r: &ResultLine) {
    assert_eq!(r.error, None);
    assert_eq!(r.status, ResultStatus::Success);
    assert_eq!(
        r.output,
        "['/a.txt', '/b.txt', '/c.txt', '/d.txt', '/e.txt', '/f.txt']"
    );
    for (path, word) in [
        ("/a.txt", "alpha"),
        ("/b.txt", "beta"),
        ("/c.txt", "gamma"),
        ("/d.txt", "delta"),
        ("/e.txt", "epsilon"),
        ("/f.txt", "zeta"),
    ] {
        assert_eq!(r.files.get(path).map(String::as_str), Some(word), "{path}");
    }
    assert_eq!(r.steps, 4, "the parent's own model calls");
}

async fn run_twins(fleet: &mut Fleet) {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec("twins", &replay_model(dir.path(), &script()), "");
    let results = fleet
        .run(&spec, &[task("t1", "Split under one id")])
        .await
        .unwrap();
    assert_finished(&results[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_and_empty_ids_finish_embedded() {
    let mut fleet = fleet().run_limit(LIMIT).embedded().unwrap();
    run_twins(&mut fleet).await;
    fleet.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_and_empty_ids_finish_distributed() {
    let Some(mut fleet) = distributed(fleet().run_limit(LIMIT), 2).await else {
        return;
    };
    run_twins(&mut fleet).await;
    fleet.shutdown().await.unwrap();
}

/// The same script served over each wire protocol, streamed and not: an
/// id repeated or empty on the wire (Gemini names empty ones itself) is
/// made unique before the harness reads the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_and_empty_ids_finish_through_each_protocol() {
    let server = ScriptedServer::start(
        Arc::new(ReplayEngine::new(Script::from_yaml(&script()).unwrap())),
        Duration::ZERO,
    )
    .await
    .unwrap();
    for stream in [false, true] {
        let config = |base_url: String| ProviderConfig {
            base_url: Some(base_url),
            api_key: Some("test-key".into()),
            timeout_secs: Some(30),
            stream,
            ..ProviderConfig::default()
        };
        let providers = HashMap::from([
            ("openai".to_owned(), config(server.url())),
            ("anthropic".to_owned(), config(server.root_url())),
            ("google_genai".to_owned(), config(server.root_url())),
        ]);
        let mut fleet = fleet()
            .run_limit(LIMIT)
            .providers(providers)
            .embedded()
            .unwrap();
        for provider in ["openai", "anthropic", "google_genai"] {
            let spec = spec(provider, &format!("{provider}:scripted"), "");
            let results = fleet
                .run(&spec, &[task("t1", "Split under one id")])
                .await
                .unwrap();
            assert_finished(&results[0]);
        }
        fleet.shutdown().await.unwrap();
    }
}
