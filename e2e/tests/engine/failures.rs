//! What a failing scenario reports: the step, its file and line, what was expected, what the
//! cluster held, and what `catch` collected; and that `finally` still runs.

use crate::run;

const SETUP: &str = "name: failing\ndescription: fails on purpose\nsteps:\n  - apply:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {color: blue, size: \"3\"}}\n";

#[test]
fn an_assert_that_never_matches_names_step_line_fields_and_shows_the_object() {
    let outcome = run(&format!(
        "{SETUP}  - name: wrong color\n    assert:\n      timeout: 2m\n      object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings}}, data: {{color: green}}}}\n"
    ));
    let failure = outcome.failure.expect("the assert must fail");
    let report = failure.to_string();
    assert!(
        report.starts_with("inline.yaml:6: step 2 wrong color, assert:"),
        "{report}"
    );
    assert!(report.contains("not matched within 2m0s"), "{report}");
    assert!(
        report.contains(r#"data.color: expected "green", found "blue""#),
        "{report}"
    );
    assert!(
        report.contains("- data:\n") || report.contains("-   color: green"),
        "{report}"
    );
    assert!(report.contains("+   color: blue"), "{report}");
    assert!(report.contains("the cluster held:"), "{report}");
    assert!(
        report.contains("size: '3'") || report.contains("size: \"3\""),
        "{report}"
    );
    // The timeout is virtual: the scenario waited two minutes of cluster time.
    assert_eq!(outcome.elapsed.as_secs(), 120);
}

#[test]
fn an_assert_on_a_missing_object_says_so() {
    let outcome = run(&format!(
        "{SETUP}  - assert:\n      timeout: 1s\n      object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: nope}}}}\n"
    ));
    let report = outcome.failure.unwrap().to_string();
    assert!(
        report.contains("ConfigMap default/nope: not found"),
        "{report}"
    );
}

#[test]
fn an_expected_refusal_that_succeeds_fails_the_step() {
    let outcome = run(&format!(
        "{SETUP}  - error:\n      create:\n        object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: fresh}}}}\n      code: 409\n"
    ));
    let report = outcome.failure.unwrap().to_string();
    assert!(report.contains("step 2"), "{report}");
    assert!(
        report.contains("succeeded, but it should have been refused"),
        "{report}"
    );
}

#[test]
fn a_refusal_of_another_kind_shows_what_the_server_answered() {
    let outcome = run(&format!(
        "{SETUP}  - error:\n      create:\n        object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings}}}}\n      code: 422\n"
    ));
    let report = outcome.failure.unwrap().to_string();
    assert!(report.contains("code: expected 422, got 409"), "{report}");
    assert!(report.contains("AlreadyExists"), "{report}");
}

#[test]
fn a_failed_write_shows_the_status_of_the_refusal() {
    let outcome = run(
        "name: failing\ndescription: x\nsteps:\n  - create:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: Bad_Name}}\n",
    );
    let report = outcome.failure.unwrap().to_string();
    assert!(
        report.starts_with("inline.yaml:4: step 1 create ConfigMap Bad_Name, create:"),
        "{report}"
    );
    assert!(
        report.contains("the server refused it: 422 Invalid"),
        "{report}"
    );
}

#[test]
fn catch_collects_and_finally_cleans_up_after_a_failure_and_later_steps_do_not_run() {
    let outcome = run(&format!(
        "{SETUP}  - try:\n      - assert:\n          timeout: 1s\n          object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings}}, data: {{color: red}}}}\n    catch:\n      - dump: {{apiVersion: v1, kind: ConfigMap, name: settings}}\n    finally:\n      - delete:\n          object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings}}}}\n  - advance: 1h\n"
    ));
    let failure = outcome.failure.expect("the assert must fail");
    assert_eq!(failure.line, 7);
    assert_eq!(failure.dumps.len(), 1);
    assert!(
        failure.dumps[0].contains("color: blue"),
        "{:?}",
        failure.dumps
    );
    assert!(failure.to_string().contains("collected by catch:"));
    let trace = outcome.trace.to_yaml();
    assert!(
        trace.contains("deleted: ConfigMap default/settings"),
        "finally ran:\n{trace}"
    );
    assert!(
        !trace.contains("advance 1h"),
        "the step after the failure ran:\n{trace}"
    );
    assert!(outcome.elapsed.as_secs() < 60);
}

#[test]
fn absent_consistently_fails_when_the_object_appears_and_says_when() {
    let outcome = run(
        "name: failing\ndescription: x\nsteps:\n  - absent:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: never-created}}\n      consistently: 1m\n  - absent:\n      object: {apiVersion: v1, kind: Service, metadata: {name: kubernetes}}\n      consistently: 1m\n",
    );
    let report = outcome.failure.unwrap().to_string();
    assert!(report.starts_with("inline.yaml:7: step 2"), "{report}");
    assert!(
        report.contains("the cluster holds Service default/kubernetes"),
        "{report}"
    );
}

#[test]
fn faults_need_a_backend_that_can_inject_them_and_the_embedded_one_can() {
    let outcome = run(
        "name: faults\ndescription: x\nsteps:\n  - fault:\n      fail: {code: 503, verb: create, resource: configmaps, times: 1}\n  - error:\n      create:\n        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n      code: 503\n      message: injected fault\n  - create:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
    );
    assert!(outcome.failure.is_none(), "{}", outcome.failure.unwrap());
}
