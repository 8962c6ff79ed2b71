use std::path::Path;

use e2e::scenario::parse;
use rstest::rstest;

fn refused(text: &str) -> String {
    match parse("bad.yaml", text, Path::new("tests/engine")) {
        Ok(_) => panic!("the scenario was accepted"),
        Err(e) => e.to_string(),
    }
}

const HEAD: &str = "name: bad\ndescription: a bad scenario\nsteps:\n";

#[rstest]
#[case::typo_in_a_field(
    "  - advance: 4m\n  - advanc: 3m\n",
    &["bad.yaml:5:5:", "unknown field `advanc`"],
)]
#[case::bad_duration("  - advance: 4x\n", &["bad.yaml:4:14:", "invalid duration `4x`", "unknown unit `x`"])]
#[case::two_operations_in_one_step(
    "  - advance: 1m\n    fault: heal\n",
    &["bad.yaml:4:", "steps[0]: needs exactly one operation", "found 2"],
)]
#[case::object_without_kind(
    "  - apply:\n      object: {apiVersion: v1, metadata: {name: a}}\n",
    &["bad.yaml:4:", "steps[0].apply: objects[0]: `kind` is missing"],
)]
#[case::object_without_name(
    "  - delete:\n      object: {apiVersion: v1, kind: ConfigMap}\n",
    &["bad.yaml:4:", "steps[0].delete: objects[0]: `metadata.name` is missing"],
)]
#[case::two_object_sources(
    "  - apply:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n      file: x.yaml\n",
    &["steps[0].apply: give only one of `object`, `objects` and `file`"],
)]
#[case::missing_file("  - apply: {file: nowhere.yaml}\n", &["steps[0].apply: file: cannot read", "nowhere.yaml"])]
#[case::nested_try(
    "  - try:\n      - try:\n          - advance: 1m\n",
    &["bad.yaml:5:", "steps[0].try[0]: `try`, `catch` and `finally` do not nest"],
)]
#[case::catch_without_try("  - advance: 1m\n    catch:\n      - advance: 1m\n", &["`catch` and `finally` belong to a step with `try`"])]
#[case::unknown_fault("  - fault: explode\n", &["bad.yaml:4:12:", "unknown variant `explode`"])]
#[case::json_patch_without_ops(
    "  - patch:\n      type: json\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
    &["steps[0].patch: `type: json` needs `ops`"],
)]
#[case::error_without_expectation(
    "  - error:\n      create:\n        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
    &["steps[0].error: say what the refusal looks like"],
)]
#[case::absent_with_timeout_and_consistently(
    "  - absent:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n      timeout: 1m\n      consistently: 1m\n",
    &["not both"],
)]
#[case::bad_trace_kind("  - advance: 1m\ntrace: [configmap]\n", &["bad.yaml:5:", "trace: `configmap` is not a kind"])]
fn a_bad_file_is_refused_naming_file_line_and_field(
    #[case] steps: &str,
    #[case] expected: &[&str],
) {
    let message = refused(&format!("{HEAD}{steps}"));
    for part in expected {
        assert!(message.contains(part), "expected {part:?} in:\n{message}");
    }
}

#[test]
fn a_bad_name_is_refused() {
    let message = refused("name: Not OK\ndescription: x\nsteps:\n  - advance: 1m\n");
    assert!(message.starts_with("bad.yaml:1:"), "{message}");
    assert!(message.contains("lower-case"), "{message}");
}

#[test]
fn a_scenario_needs_steps() {
    let message = refused("name: empty\ndescription: x\nsteps: []\n");
    assert!(message.contains("at least one step"), "{message}");
}

#[test]
fn yaml_syntax_errors_show_the_lines_around_them() {
    let message = refused("name: a\ndescription: x\nsteps: [\n");
    assert!(message.starts_with("bad.yaml:3:"), "{message}");
    assert!(message.contains("bad.yaml:3"), "{message}");
    assert!(!message.contains("<input>"), "{message}");
}

#[test]
fn steps_and_operations_keep_their_lines_and_the_trace_defaults_to_the_kinds_named() {
    let s = crate::scenario(
        "name: ok\ndescription: fine\nsteps:\n  - advance: 1m\n  - name: block\n    try:\n      - apply:\n          object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n    finally:\n      - delete:\n          object: {apiVersion: v1, kind: Secret, metadata: {name: a}}\n",
    );
    assert_eq!(s.steps.len(), 2);
    assert_eq!((s.steps[0].line, s.steps[1].line), (4, 5));
    assert_eq!(s.steps[1].try_[0].line, 7);
    assert_eq!(s.steps[1].finally[0].line, 10);
    let kinds: Vec<String> = s.trace.iter().map(ToString::to_string).collect();
    assert_eq!(kinds, ["v1/ConfigMap", "v1/Secret"]);
    assert_eq!(s.namespace, "default");
}

#[test]
fn files_are_read_relative_to_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("objs.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
    )
    .unwrap();
    let s = parse(
        "s.yaml",
        &format!("{HEAD}  - apply: {{file: objs.yaml}}\n"),
        dir.path(),
    )
    .unwrap();
    let written = s.steps[0].try_[0].action.written();
    assert_eq!(written.len(), 2);
    assert_eq!(written[1]["metadata"]["name"], "b");
}

#[test]
fn the_readme_shows_a_real_scenario_file() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("## Scenarios").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let shown = &section[start..start + section[start..].find("```\n").unwrap()];
    let file =
        std::fs::read_to_string(root.join("e2e/scenarios/finalizer-holds-deletion.yaml")).unwrap();
    assert_eq!(
        shown, file,
        "README.md's scenario differs from e2e/scenarios/finalizer-holds-deletion.yaml"
    );
}

/// The GPU story in the README is shortened from its scenario file; it must still run green.
#[test]
fn the_readmes_gpu_story_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = &readme[readme.find("### The GPU story").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let shown = &section[start..start + section[start..].find("```\n").unwrap()];
    let scenario = parse("README.md", shown, &root).unwrap_or_else(|e| panic!("{e}"));
    let registry = e2e::scenario::components::Registry::standard();
    let outcome = e2e::scenario::run::run_blocking(&scenario, &registry).expect("runs");
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
    assert!(
        outcome.elapsed >= std::time::Duration::from_secs(120),
        "the pods wait for the nodes: {:?}",
        outcome.elapsed
    );
}
