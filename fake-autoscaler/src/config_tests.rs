use rstest::rstest;

use super::*;

#[test]
fn defaults_are_the_two_upstream_classes_and_upstream_timings() {
    let config = Config::parse("{}").expect("empty");
    let names: Vec<&str> = config.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "check-capacity.autoscaling.x-k8s.io",
            "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
        ]
    );
    assert_eq!(config.timing.booking_time.get().as_secs(), 600);
    assert_eq!(config.timing.expiry.get().as_secs(), 7 * 24 * 3600);
    assert_eq!(config.timing.retry_initial.get().as_secs(), 60);
    assert_eq!(config.timing.retry_max.get().as_secs(), 600);
    assert_eq!(
        Config::from_value(&serde_json::Value::Null).expect("null"),
        config
    );
}

#[rstest]
#[case::unknown_field("nodeGroup: []", "unknown field `nodeGroup`")]
#[case::missing_max(
    "nodeGroups: [{name: a, machine: {cpu: '1'}}]",
    "missing field `maxSize`"
)]
#[case::min_over_max(
    "nodeGroups: [{name: a, machine: {cpu: '1'}, minSize: 3, maxSize: 2}]",
    "nodeGroups[0].minSize: is larger than maxSize"
)]
#[case::bad_quantity(
    "nodeGroups: [{name: a, machine: {cpu: lots}, maxSize: 2}]",
    "nodeGroups[0].machine.cpu: `lots` is not a Kubernetes quantity"
)]
#[case::bad_group_name(
    "nodeGroups: [{name: A_B, machine: {}, maxSize: 1}]",
    "nodeGroups[0].name: must be a DNS label"
)]
#[case::duplicate_group(
    "nodeGroups: [{name: a, machine: {}, maxSize: 1}, {name: a, machine: {}, maxSize: 1}]",
    "nodeGroups[1].name: two node groups have this name"
)]
#[case::unknown_behaviour("classes: [{name: x, behaviour: magic}]", "unknown variant `magic`")]
#[case::scripted_without_timeline(
    "classes: [{name: x, behaviour: scripted}]",
    "classes[0].timeline: a scripted class needs a timeline"
)]
#[case::timeline_on_a_simulated_class(
    "classes: [{name: x, behaviour: check-capacity, timeline: [{after: 1s, set: Accepted}]}]",
    "classes[0].timeline: only a scripted class has a timeline"
)]
#[case::vendor_fields_elsewhere(
    "classes: [{name: x, behaviour: atomic-scale-up, queueDelay: 1m}]",
    "classes[0].behaviour: queueDelay, provisioningClassDetails and nodeLabels are for a vendor class only"
)]
#[case::steps_out_of_order(
    "scripts: [{timeline: [{after: 2m, set: Accepted}, {after: 1m, set: Provisioned}]}]",
    "scripts[0].timeline[1].after: steps must be in time order"
)]
#[case::bad_status(
    "scripts: [{timeline: [{after: 1m, set: Provisioned=Maybe}]}]",
    "scripts[0].timeline[0].set[0]: condition Provisioned: status `Maybe` is not True, False or Unknown"
)]
#[case::unknown_type_without_reason(
    "scripts: [{timeline: [{after: 1m, set: Ready}]}]",
    "scripts[0].timeline[0].set[0]: condition `Ready` has no default reason"
)]
#[case::bad_duration("timing: {bookingTime: ten}", "invalid duration")]
#[case::retry_bounds(
    "timing: {retryInitial: 20m}",
    "timing.retryInitial: is longer than timing.retryMax"
)]
#[case::unknown_broken("broken: nope", "unknown variant `nope`")]
fn bad_configurations_name_the_problem(#[case] text: &str, #[case] expected: &str) {
    let err = Config::parse(text).expect_err("invalid").to_string();
    assert!(err.contains(expected), "{err}");
}

#[test]
fn a_list_of_two_short_conditions_is_two_conditions() {
    let config =
        Config::parse("scripts: [{timeline: [{after: 0s, set: [Accepted, Provisioned]}]}]")
            .expect("config");
    let types: Vec<String> = config.scripts[0].timeline[0]
        .set
        .iter()
        .map(|c| c.resolve().expect("resolves").type_)
        .collect();
    assert_eq!(types, ["Accepted", "Provisioned"]);
}

#[test]
fn short_conditions_take_upstream_reasons_and_messages() {
    let config = Config::parse(
        "scripts: [{match: {class: c}, timeline: [{after: 0s, set: [Accepted, Provisioned=False, \
         {type: Failed, reason: OutOfResources, message: gone}]}]}]",
    )
    .expect("config");
    let resolved: Vec<Resolved> = config.scripts[0].timeline[0]
        .set
        .iter()
        .map(|c| c.resolve().expect("resolves"))
        .collect();
    let short: Vec<(&str, &str, &str)> = resolved
        .iter()
        .map(|r| (r.type_.as_str(), r.status.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(
        short,
        [
            ("Accepted", "True", "Accepted"),
            ("Provisioned", "False", "CapacityIsNotFound"),
            ("Failed", "True", "OutOfResources"),
        ]
    );
    assert_eq!(resolved[2].message, "gone");
}

#[rstest]
#[case("train-*", "train-gpu-check-1", true)]
#[case("train-*", "eval-1", false)]
#[case("*-check-2", "train-check-2", true)]
#[case("exact", "exact", true)]
#[case("exact", "exactly", false)]
#[case("*", "", true)]
fn script_name_patterns(#[case] pattern: &str, #[case] name: &str, #[case] matches: bool) {
    let m = Match {
        name: Some(pattern.into()),
        ..Match::default()
    };
    assert_eq!(m.matches("ns", name, "class"), matches);
}

#[test]
fn match_needs_every_field_given() {
    let m = Match {
        name: None,
        namespace: Some("team-a".into()),
        class: Some("c".into()),
    };
    assert!(m.matches("team-a", "x", "c"));
    assert!(!m.matches("team-b", "x", "c"));
    assert!(!m.matches("team-a", "x", "d"));
}
