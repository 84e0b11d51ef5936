use super::*;
use crate::middleware::test_cx;
use pretty_assertions::assert_eq;

fn skill_md(name: &str, description: &str, extra: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nSteps...\n")
}

// deepagents conformance §13.2 item 23.
#[tokio::test]
async fn later_source_wins_and_lines_render() {
    let mut cx = test_cx("");
    let b = &cx.backend;
    b.write(
        "/skills/base/web-research/SKILL.md",
        &skill_md("web-research", "Old description.", ""),
    )
    .await
    .unwrap();
    b.write(
        "/skills/user/web-research/SKILL.md",
        &skill_md(
            "web-research",
            "Search the web and cite sources.",
            "license: MIT\n",
        ),
    )
    .await
    .unwrap();
    b.write(
        "/skills/user/csv/SKILL.md",
        &skill_md(
            "csv",
            "Clean CSV files.",
            "allowed-tools: read_file, write_file\ncompatibility: python3\n",
        ),
    )
    .await
    .unwrap();
    let skills = Skills::new(vec!["/skills/base/".into(), "/skills/user/".into()]);
    skills.before_model(&mut cx).await.unwrap();
    let text = skills.prompt(&cx).unwrap().text;
    assert!(text.contains(
        "- **web-research**: Search the web and cite sources. (License: MIT)\n  -> Read `/skills/user/web-research/SKILL.md` for full instructions"
    ), "{text}");
    assert!(text.contains(
        "- **csv**: Clean CSV files. (Compatibility: python3)\n  -> Allowed tools: read_file, write_file\n  -> Read `/skills/user/csv/SKILL.md` for full instructions"
    ), "{text}");
    assert!(!text.contains("Old description"), "{text}");
    assert!(
        text.contains(
            "**Base Skills**: `/skills/base/`\n**User Skills**: `/skills/user/` (higher priority)"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn metadata_is_loaded_once_per_thread() {
    let mut cx = test_cx("");
    cx.backend
        .write("/skills/a/SKILL.md", &skill_md("a", "First.", ""))
        .await
        .unwrap();
    let skills = Skills::new(vec!["/skills/".into()]);
    skills.before_model(&mut cx).await.unwrap();
    let first = skills.prompt(&cx).unwrap().text;
    cx.backend
        .write("/skills/b/SKILL.md", &skill_md("b", "Second.", ""))
        .await
        .unwrap();
    skills.before_model(&mut cx).await.unwrap();
    assert_eq!(skills.prompt(&cx).unwrap().text, first);
    assert!(first.contains("**Skills Skills**: `/skills/`"), "{first}");
}

#[test]
fn limits_and_required_fields() {
    let long = "d".repeat(2000);
    let compat = "c".repeat(600);
    let md = skill_md(
        "x",
        &long,
        &format!("compatibility: {compat}\nmetadata: {{version: 2}}\n"),
    );
    let skill = parse("/s/x/SKILL.md", "x", &md).unwrap();
    assert_eq!(skill.description.len(), MAX_DESCRIPTION);
    assert_eq!(skill.compatibility.unwrap().len(), MAX_COMPATIBILITY);
    assert_eq!(skill.metadata["version"], "2");
    // A bad name loads anyway (deepagents only warns).
    assert!(parse("/s/x/SKILL.md", "x", &skill_md("Not_Valid", "d", "")).is_ok());
    assert!(!valid_name(&"a".repeat(65)));
    assert!(valid_name("web-research2"));
    assert!(parse("/s/x/SKILL.md", "x", "---\ndescription: d\n---\n").is_err());
    assert!(parse("/s/x/SKILL.md", "x", "---\nname: x\ndescription: ''\n---\n").is_err());
    assert!(parse("/s/x/SKILL.md", "x", "# no frontmatter\n").is_err());
    let listed = parse(
        "/s/x/SKILL.md",
        "x",
        &skill_md("x", "d", "allowed-tools: [ls, grep]\n"),
    )
    .unwrap();
    assert_eq!(listed.allowed_tools, ["ls", "grep"]);
}

#[tokio::test]
async fn no_skills_says_where_to_create_them() {
    let mut cx = test_cx("");
    let skills = Skills::new(vec!["/skills/".into(), "/team/skills/".into()]);
    skills.before_model(&mut cx).await.unwrap();
    let text = skills.prompt(&cx).unwrap().text;
    assert!(
        text.contains(
            "(No skills available yet. You can create skills in `/skills/` or `/team/skills/`)"
        ),
        "{text}"
    );
    assert!(
        text.contains("**Team Skills**: `/team/skills/` (higher priority)"),
        "{text}"
    );
}
