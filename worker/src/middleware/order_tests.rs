//! The assembled prompt with memory, skills and a harness profile, in
//! DESIGN §7 order, and the profile's tool changes on a built agent.

use std::collections::BTreeMap;

use deepfleet_model::Providers;
use deepfleet_proto::harness::HarnessProfile;

use crate::agent::{Agent, AgentOptions};
use crate::middleware::test_cx;

const SPEC: &str = "system_prompt: You are the agent.\nplanning: true\n\
    memory: [/memory/AGENTS.md]\nskills: [/skills/]\n\
    profiles:\n  replay:\n    system_prompt_suffix: Profile suffix.\n    excluded_tools: [grep]\n\
    \x20   tool_description_overrides: {ls: Lists a directory.}\n";

#[tokio::test]
async fn sections_follow_design_order() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.yaml");
    std::fs::write(&script, "rules: []\n").unwrap();
    let mut cx = test_cx(SPEC);
    let mut spec = (*cx.spec).clone();
    spec.model = format!("replay:{}", script.display());
    cx.spec = std::sync::Arc::new(spec.clone());
    cx.backend
        .write("/memory/AGENTS.md", "Remember the milk.")
        .await
        .unwrap();
    cx.backend
        .write(
            "/skills/csv/SKILL.md",
            "---\nname: csv\ndescription: Clean CSV files.\n---\nbody\n",
        )
        .await
        .unwrap();
    let configured = BTreeMap::from([(
        "replay".to_owned(),
        HarnessProfile {
            base_system_prompt: Some("Configured base.".into()),
            ..HarnessProfile::default()
        },
    )]);
    let options = AgentOptions {
        profiles: configured,
        ..AgentOptions::default()
    };
    let providers = deepfleet_replay::register(Providers::with_env(Default::default(), |_| None));
    let agent = Agent::build_with(&spec, &cx.run, &providers, &options).unwrap();
    for layer in &agent.stack {
        layer.before_model(&mut cx).await.unwrap();
    }
    let prompt = agent.system_prompt(&cx);
    let at = |needle: &str| {
        prompt
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from:\n{prompt}"))
    };
    let order = [
        at("You are the agent."),
        at("Configured base.\n\nProfile suffix."),
        at("<agent_memory>\n/memory/AGENTS.md\n\nRemember the milk."),
        at("- **csv**: Clean CSV files."),
        at("## Files"),
        at("## Subagents"),
        at("## Planning"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{prompt}");
    assert_eq!(
        prompt.matches("You are a capable agent").count(),
        0,
        "base replaced"
    );

    assert!(!agent.tools.names().iter().any(|n| n == "grep"));
    let ls = agent.tools.specs().iter().find(|s| s.name == "ls").unwrap();
    assert_eq!(ls.description, "Lists a directory.");
    // Stable from step to step: a second step renders the same bytes.
    for layer in &agent.stack {
        layer.before_model(&mut cx).await.unwrap();
    }
    assert_eq!(agent.system_prompt(&cx), prompt);
}
