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
                ..ProviderConfig::default()
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
        assert_eq!(providers.build(provider).unwrap().endpoint("m"), endpoint);
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
    assert_eq!(
        client.endpoint("m"),
        "http://env.invalid/v1/chat/completions"
    );
    // A provider unknown by name works once a base URL is given for it.
    let client = providers.build("my-proxy").unwrap();
    assert_eq!(
        client.endpoint("m"),
        "http://proxy.invalid/chat/completions"
    );
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
            ..ProviderConfig::default()
        }
    );
}

#[test]
fn anthropic_and_gemini_get_their_own_protocols_and_key_variables() {
    install_crypto();
    let providers = providers(&[
        ("GOOGLE_API_KEY", "AIza-env"),
        ("ANTHROPIC_BASE_URL", "http://anthropic.invalid"),
    ]);
    assert_eq!(providers.route("anthropic").unwrap().0, Wire::Messages);
    let anthropic = providers.build("anthropic").unwrap();
    assert_eq!(
        anthropic.endpoint("claude-sonnet-4-5"),
        "http://anthropic.invalid/v1/messages"
    );
    assert_eq!(
        providers.route("google_genai").unwrap().0,
        Wire::GenerateContent
    );
    let gemini = providers.build("google_genai").unwrap();
    assert_eq!(
        gemini.endpoint("gemini-2.5-flash"),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    let shown = format!("{gemini:?}");
    assert!(
        shown.contains("authorized: true") && !shown.contains("AIza-env"),
        "{shown}"
    );
    assert_eq!(
        providers.route("fireworks").unwrap().0,
        Wire::ChatCompletions
    );
}

#[test]
fn resolved_models_carry_profiles_from_config_then_the_table() {
    install_crypto();
    let profile = |input, output| deepfleet_proto::ModelProfile {
        max_input_tokens: input,
        max_output_tokens: output,
    };
    let configs = HashMap::from([(
        "ollama".to_owned(),
        ProviderConfig {
            profiles: HashMap::from([("north-mini".to_owned(), profile(32_768, 4_096))]),
            ..ProviderConfig::default()
        },
    )]);
    let providers = Providers::with_env(configs, |_| None);
    let resolved = |spec: &str| providers.resolve(spec).unwrap().profile;
    assert_eq!(
        resolved("ollama:north-mini-code-1.0"),
        Some(profile(32_768, 4_096))
    );
    assert_eq!(resolved("ollama:llama3:8b"), None);
    assert_eq!(
        resolved("anthropic:claude-sonnet-4-5"),
        Some(profile(200_000, 64_000))
    );
    assert_eq!(
        resolved("google_genai:gemini-2.5-pro"),
        Some(profile(1_048_576, 65_536))
    );
}

#[test]
fn provider_config_reads_stream_and_profiles() {
    let config: ProviderConfig = serde_json::from_value(serde_json::json!({
        "stream": true,
        "profiles": {"glm-": {"max_input_tokens": 200000, "max_output_tokens": 128000}}
    }))
    .unwrap();
    assert!(config.stream);
    assert_eq!(config.profiles["glm-"].max_output_tokens, 128_000);
    let error = serde_json::from_value::<ProviderConfig>(serde_json::json!({"strem": true}))
        .err()
        .unwrap();
    assert!(error.to_string().contains("strem"), "{error}");
}

#[test]
fn provider_config_sets_the_bounds_of_an_answer() {
    let configs: HashMap<String, ProviderConfig> = serde_json::from_value(serde_json::json!({
        "openai": {"idle_timeout_secs": 20, "max_response_bytes": 1048576},
        "anthropic": {}
    }))
    .unwrap();
    let providers = Providers::with_env(configs, |_| None);
    let (_, set) = providers.route("openai").unwrap();
    assert_eq!(set.idle_timeout, Duration::from_secs(20));
    assert_eq!(set.max_response_bytes, 1_048_576);
    let (_, defaults) = providers.route("anthropic").unwrap();
    assert_eq!(
        defaults.idle_timeout,
        crate::transport::DEFAULT_IDLE_TIMEOUT
    );
    assert_eq!(
        defaults.max_response_bytes,
        crate::transport::DEFAULT_MAX_RESPONSE_BYTES
    );
}
