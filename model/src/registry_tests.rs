use super::*;
use pretty_assertions::assert_eq;

fn install_crypto() {
    // Another test may have installed it already.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn providers(env: &[(&str, &str)]) -> Providers {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let configs = HashMap::from([
        (
            "openai".to_owned(),
            ProviderConfig {
                base_url: Some("https://config.invalid/v1".into()),
                api_key: Some("sk-config".into()),
                timeout_secs: Some(5),
            },
        ),
        (
            "local".to_owned(),
            ProviderConfig {
                base_url: Some("http://127.0.0.1:9/v1/".into()),
                ..ProviderConfig::default()
            },
        ),
    ]);
    Providers::with_env(configs, move |name| env.get(name).cloned())
}

#[test]
fn known_providers_have_default_base_urls() {
    install_crypto();
    let providers = providers(&[]);
    let cases = [
        (
            "openrouter",
            "https://openrouter.ai/api/v1/chat/completions",
        ),
        (
            "fireworks",
            "https://api.fireworks.ai/inference/v1/chat/completions",
        ),
        (
            "baseten",
            "https://inference.baseten.co/v1/chat/completions",
        ),
        ("ollama", "http://localhost:11434/v1/chat/completions"),
        ("openai", "https://config.invalid/v1/chat/completions"),
        ("local", "http://127.0.0.1:9/v1/chat/completions"),
    ];
    for (provider, endpoint) in cases {
        assert_eq!(providers.build(provider).unwrap().endpoint(), endpoint);
    }
}

#[test]
fn environment_overrides_config() {
    install_crypto();
    let providers = providers(&[
        ("OPENAI_BASE_URL", "http://env.invalid/v1"),
        ("OPENAI_API_KEY", "sk-env"),
        ("MY_PROXY_BASE_URL", "http://proxy.invalid"),
    ]);
    let client = providers.build("openai").unwrap();
    assert_eq!(client.endpoint(), "http://env.invalid/v1/chat/completions");
    // A provider unknown by name works once a base URL is given for it.
    let client = providers.build("my-proxy").unwrap();
    assert_eq!(client.endpoint(), "http://proxy.invalid/chat/completions");
}

#[test]
fn resolve_splits_at_the_first_colon_and_caches_clients() {
    install_crypto();
    let providers = providers(&[]);
    let first = providers.resolve("ollama:llama3:8b").unwrap();
    assert_eq!(first.model, "llama3:8b");
    let second = providers.resolve("ollama:qwen3").unwrap();
    assert!(Arc::ptr_eq(&first.client, &second.client));
}

#[test]
fn unknown_providers_and_bare_names_are_unsupported() {
    install_crypto();
    let providers = providers(&[]);
    let error = providers.resolve("acme:model-1").err().unwrap();
    assert_eq!(error.kind, ErrorKind::Unsupported);
    assert!(error.message.contains("\"acme\""), "{}", error.message);
    assert!(error.message.contains("ACME_BASE_URL"), "{}", error.message);
    let error = providers.resolve("gpt-4.1").err().unwrap();
    assert_eq!(error.kind, ErrorKind::Unsupported);
}

#[tokio::test]
async fn replay_paths_share_one_engine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.yaml");
    std::fs::write(
        &path,
        "rules:\n  - error: {status: 500, message: boom, times: 1}\n  - reply: {text: hi}\n",
    )
    .unwrap();
    let providers = providers(&[]).with_retry(RetryPolicy::none());
    let spec = format!("replay:{}", path.display());
    let request = crate::ModelRequest {
        model: String::new(),
        system: String::new(),
        messages: vec![deepfleet_proto::Message::user("x")],
        tools: vec![],
        max_output_tokens: None,
        cache_key: None,
        purpose: crate::CallPurpose::Agent,
    };
    let first = providers.resolve(&spec).unwrap();
    assert_eq!(first.model, path.display().to_string());
    let error = first.client.complete(&request).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Server);
    // The second client sees the same counter: the one failure is spent.
    let second = providers.resolve(&spec).unwrap();
    assert!(second.client.complete(&request).await.is_ok());

    let error = providers.resolve("replay:/nonexistent.yaml").err().unwrap();
    assert_eq!(error.kind, ErrorKind::BadRequest);
    assert!(
        error.message.contains("/nonexistent.yaml"),
        "{}",
        error.message
    );
}

#[test]
fn debug_output_hides_api_keys() {
    install_crypto();
    let providers = providers(&[("OPENAI_API_KEY", "sk-secret-env")]);
    let shown = format!("{providers:?} {:?}", providers.build("openai").unwrap());
    assert!(
        !shown.contains("sk-config") && !shown.contains("sk-secret"),
        "{shown}"
    );
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[test]
fn provider_config_deserializes() {
    let config: HashMap<String, ProviderConfig> = serde_json::from_value(serde_json::json!({
        "fireworks": {"api_key": "k", "timeout_secs": 30}
    }))
    .unwrap();
    assert_eq!(
        config["fireworks"],
        ProviderConfig {
            base_url: None,
            api_key: Some("k".into()),
            timeout_secs: Some(30),
        }
    );
}
