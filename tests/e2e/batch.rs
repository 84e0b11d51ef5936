//! The example batch: many runs, each with files and a subagent.

use deepfleet_proto::{AgentSpec, ResultStatus, TaskLine};

use crate::support::{scenario, task};

/// The briefings example's spec, with its replay script resolved.
pub fn briefings_spec() -> AgentSpec {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/briefings");
    let text = std::fs::read_to_string(dir.join("agent.yaml")).unwrap();
    let mut spec = AgentSpec::from_yaml(&text).unwrap();
    spec.model = format!("replay:{}", dir.join("script.yaml").display());
    spec
}

/// `n` briefing tasks on distinct topics.
pub fn briefing_tasks(n: usize) -> Vec<TaskLine> {
    (0..n)
        .map(|i| task(&format!("b{i}"), &format!("Write a briefing on topic {i}.")))
        .collect()
}

/// The output a briefing run must produce.
pub fn expected_briefing(i: usize) -> String {
    format!(
        "Briefing on topic {i}:\n@@ lines 1-3 of 3 @@\n# topic {i}\n\nSummary: topic {i} matters because it is in our batch."
    )
}

scenario!(fifty_briefings, |fleet| {
    let spec = briefings_spec();
    let results = fleet.run(&spec, &briefing_tasks(50)).await.unwrap();
    assert_eq!(results.len(), 50);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output, expected_briefing(i));
        assert_eq!(r.steps, 4);
        assert!(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
        assert_eq!(
            r.files
                .get(&format!("/notes/topic {i}.md"))
                .map(String::as_str),
            Some(
                format!("# topic {i}\n\nSummary: topic {i} matters because it is in our batch.\n")
                    .as_str()
            )
        );
    }
});
