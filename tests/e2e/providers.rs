//! Batches through each wire protocol (OpenAI Chat Completions, Anthropic
//! Messages, Gemini generateContent), streamed and not, against the
//! scripted server: the same script must give the same results whatever
//! the protocol, and cached-token counts must reach the result lines.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_model::ProviderConfig;
use deepfleet_proto::{ResultLine, ResultStatus};
use deepfleet_replay::{ReplayEngine, Script};
use deepfleet_testkit::ScriptedServer;
use deepfleet_testkit::script::{ScriptBuilder, When};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::batch::{briefing_tasks, expected_briefing};
use crate::support::{Fleet, fleet, spec, task};

/// The providers under test and the base URL each takes.
const PROVIDERS: [&str; 3] = ["openai", "anthropic", "google_genai"];

async fn server(script: Script) -> ScriptedServer {
    ScriptedServer::start(Arc::new(ReplayEngine::new(script)), Duration::ZERO)
        .await
        .unwrap()
}

/// An embedded fleet with all three providers on `server`.
fn embedded(server: &ScriptedServer, stream: bool) -> Fleet {
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
    fleet().providers(providers).embedded().unwrap()
}

/// What must match across protocols: everything but the token counts,
/// which the replay model estimates from each protocol's request size.
fn outcome(r: &ResultLine) -> (String, ResultStatus, String, u32, Vec<(String, String)>) {
    let mut files: Vec<(String, String)> = r
        .files
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    files.sort();
    (r.id.clone(), r.status, r.output.clone(), r.steps, files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_briefings_through_each_protocol_streamed_and_not() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/briefings/script.yaml");
    let server = server(Script::load(&path).unwrap()).await;
    let tasks = briefing_tasks(20);
    let mut outcomes = Vec::new();
    for stream in [false, true] {
        let mut fleet = embedded(&server, stream);
        for provider in PROVIDERS {
            let spec = spec(
                &format!("briefings-{provider}-{stream}"),
                &format!("{provider}:scripted-model"),
                "",
            );
            let results = fleet.run(&spec, &tasks).await.unwrap();
            assert_eq!(results.len(), 20, "{provider} stream={stream}");
            for (i, r) in results.iter().enumerate() {
                assert_eq!(r.status, ResultStatus::Success, "{provider}: {:?}", r.error);
                assert_eq!(r.output, expected_briefing(i), "{provider} stream={stream}");
                assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
            }
            outcomes.push((
                provider,
                stream,
                results.iter().map(outcome).collect::<Vec<_>>(),
            ));
        }
        fleet.shutdown().await.unwrap();
    }
    let (_, _, reference) = &outcomes[0];
    for (provider, stream, outcome) in &outcomes {
        assert_eq!(outcome, reference, "{provider} stream={stream}");
    }
    // 7 model calls per run (4 main, 3 subagent), 6 batches of 20.
    let requests = server.requests();
    assert_eq!(requests.len(), 6 * 20 * 7);
    // OpenAI and Anthropic say `stream` in the body (Gemini in the URL).
    let streamed = requests.iter().filter(|r| r["stream"] == true).count();
    assert_eq!(streamed, 2 * 20 * 7);
}

/// Answers `Say WORD` with the word, reporting cached prompt tokens.
fn cached_script() -> String {
    let usage = json!({"input_tokens": 5000, "output_tokens": 12, "cached_input_tokens": 4096});
    ScriptBuilder::new()
        .reply(
            When::input(r"^Say (?P<word>\w+)"),
            json!({"text": "{{word}}", "usage": usage}),
        )
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_tokens_reach_the_result_lines_on_every_protocol() {
    let server = server(Script::from_yaml(&cached_script()).unwrap()).await;
    for stream in [false, true] {
        let mut fleet = embedded(&server, stream);
        for provider in PROVIDERS {
            let spec = spec(
                &format!("cached-{provider}-{stream}"),
                &format!("{provider}:scripted-model"),
                "",
            );
            let tasks = [task("a", "Say hello"), task("b", "Say goodbye")];
            let results = fleet.run(&spec, &tasks).await.unwrap();
            let seen: Vec<(&str, u64, u64, u64)> = results
                .iter()
                .map(|r| {
                    (
                        r.output.as_str(),
                        r.usage.input_tokens,
                        r.usage.output_tokens,
                        r.usage.cached_input_tokens,
                    )
                })
                .collect();
            assert_eq!(
                seen,
                vec![("hello", 5000, 12, 4096), ("goodbye", 5000, 12, 4096)],
                "{provider} stream={stream}"
            );
        }
        fleet.shutdown().await.unwrap();
    }
}

/// The spec's `model_params` reach each provider's request body in its
/// own terms (Anthropic takes no reasoning effort: the README's
/// Interfaces has the mapping).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_params_reach_every_protocol_in_its_own_terms() {
    let server = server(Script::from_yaml(&cached_script()).unwrap()).await;
    let mut fleet = embedded(&server, false);
    let params = "model_params:\n  temperature: 0.25\n  top_p: 0.5\n  max_output_tokens: 321\n  \
                  reasoning_effort: low\n";
    let mut bodies = Vec::new();
    for provider in PROVIDERS {
        let spec = spec(
            &format!("params-{provider}"),
            &format!("{provider}:scripted-model"),
            params,
        );
        let results = fleet.run(&spec, &[task("a", "Say hi")]).await.unwrap();
        assert_eq!(
            results[0].output, "hi",
            "{provider}: {:?}",
            results[0].error
        );
        let requests = server.requests();
        bodies.push(requests.last().cloned().unwrap());
    }
    fleet.shutdown().await.unwrap();
    let [openai, anthropic, gemini] = &bodies[..] else {
        panic!("{bodies:?}");
    };
    let picked = |body: &serde_json::Value, keys: &[&str]| -> Vec<serde_json::Value> {
        keys.iter()
            .map(|k| body.pointer(k).cloned().unwrap_or_default())
            .collect()
    };
    assert_eq!(
        picked(
            openai,
            &[
                "/temperature",
                "/top_p",
                "/max_completion_tokens",
                "/reasoning_effort"
            ]
        ),
        [json!(0.25), json!(0.5), json!(321), json!("low")]
    );
    assert_eq!(
        picked(
            anthropic,
            &["/temperature", "/top_p", "/max_tokens", "/thinking"]
        ),
        [json!(0.25), json!(0.5), json!(321), json!(null)]
    );
    assert_eq!(
        gemini["generationConfig"],
        json!({"temperature": 0.25, "topP": 0.5, "maxOutputTokens": 321,
               "thinkingConfig": {"thinkingBudget": 1024}})
    );
}
