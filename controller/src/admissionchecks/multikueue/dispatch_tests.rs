use super::*;
use rstest::rstest;

const START: &str = "2026-01-01T00:00:00Z";

fn at(minutes: i64) -> Timestamp {
    let start: Timestamp = START.parse().expect("a time");
    start
        .checked_add(jiff::SignedDuration::from_mins(minutes))
        .expect("in range")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn set(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[rstest]
#[case::default_when_unset("", Dispatcher::AllAtOnce)]
#[case::all_at_once(dispatcher::ALL_AT_ONCE, Dispatcher::AllAtOnce)]
#[case::incremental(dispatcher::INCREMENTAL, Dispatcher::Incremental)]
#[case::any_other_name_is_external("example.com/custom-mk-dispatcher", Dispatcher::External)]
fn the_configured_name_picks_the_dispatcher(#[case] name: &str, #[case] expected: Dispatcher) {
    assert_eq!(Dispatcher::from_name(name), expected);
}

#[rstest]
#[case::every_connected_worker_sorted_by_name(
    &["w3", "w1", "w2"], &["w1", "w2", "w3"], &[], Some(&["w1", "w2", "w3"][..]))]
#[case::disconnected_workers_are_left_out(
    &["w1", "w2", "w3"], &["w1", "w3"], &[], Some(&["w1", "w3"][..]))]
#[case::unchanged_set_is_not_rewritten(
    &["w1", "w2"], &["w1", "w2"], &["w2", "w1"], None)]
#[case::a_worker_lost_shrinks_the_nomination(
    &["w1", "w2"], &["w2"], &["w1", "w2"], Some(&["w2"][..]))]
#[case::no_connected_worker_clears_it(&["w1"], &[], &["w1"], Some(&[][..]))]
fn all_at_once_nominates_every_connected_worker(
    #[case] clusters: &[&str],
    #[case] active: &[&str],
    #[case] stored: &[&str],
    #[case] write: Option<&[&str]>,
) {
    let clusters = names(clusters);
    let active = set(active);
    let stored = names(stored);
    let n = nominate(
        Dispatcher::AllAtOnce,
        &Facts {
            nominated: &stored,
            clusters: &clusters,
            active: &active,
            round_start: None,
            now: at(0),
        },
    );
    let mut expected: Vec<String> = active.iter().cloned().collect();
    expected.sort();
    assert_eq!(n.nominated, expected);
    assert_eq!(n.write, write.map(names));
    assert!(!n.round_started);
    assert_eq!(n.wake_at, None);
}

/// Five workers, listed out of order in the config.
const FIVE: &[&str] = &["w5", "w2", "w4", "w1", "w3"];

#[rstest]
#[case::first_round_takes_the_first_three_by_name(
    &[], None, 0, &["w1", "w2", "w3"], true, Some(5))]
#[case::a_running_round_waits_for_its_end(
    &["w1", "w2", "w3"], Some(0), 4, &["w1", "w2", "w3"], false, Some(5))]
#[case::after_five_minutes_the_next_ones_are_added(
    &["w1", "w2", "w3"], Some(0), 5, &["w1", "w2", "w3", "w4", "w5"], true, Some(10))]
#[case::all_tried_nothing_more_to_add(
    &["w1", "w2", "w3", "w4", "w5"], Some(5), 10, &["w1", "w2", "w3", "w4", "w5"], false, None)]
#[case::a_forgotten_round_restarts_without_widening(
    &["w1", "w2", "w3"], None, 7, &["w1", "w2", "w3"], true, Some(12))]
fn incremental_nominates_three_more_every_five_minutes(
    #[case] stored: &[&str],
    #[case] round_start: Option<i64>,
    #[case] now: i64,
    #[case] nominated: &[&str],
    #[case] round_started: bool,
    #[case] wake_at: Option<i64>,
) {
    let clusters = names(FIVE);
    // Incremental nominates whether or not a worker is connected, as Kueue does.
    let active = set(&[]);
    let stored = names(stored);
    let n = nominate(
        Dispatcher::Incremental,
        &Facts {
            nominated: &stored,
            clusters: &clusters,
            active: &active,
            round_start: round_start.map(at),
            now: at(now),
        },
    );
    assert_eq!(n.nominated, names(nominated));
    let grew = n.nominated.len() > stored.len();
    assert_eq!(n.write.is_some(), grew, "written only when it grows");
    assert_eq!(n.round_started, round_started);
    assert_eq!(n.wake_at, wake_at.map(at));
}

#[rstest]
#[case::nothing_nominated_nothing_dispatched(&[])]
#[case::only_what_was_written(&["w2"])]
fn external_follows_the_stored_nomination(#[case] stored: &[&str]) {
    let clusters = names(&["w1", "w2", "w3"]);
    let active = set(&["w1", "w2", "w3"]);
    let stored = names(stored);
    let n = nominate(
        Dispatcher::External,
        &Facts {
            nominated: &stored,
            clusters: &clusters,
            active: &active,
            round_start: None,
            now: at(0),
        },
    );
    assert_eq!(
        n,
        Nomination {
            nominated: stored.clone(),
            ..Nomination::default()
        }
    );
}

#[rstest]
#[case::missing_copies_are_created(&["w1", "w2"], &[], &["w1", "w2"], &["w1", "w2"], &[])]
#[case::existing_copies_are_kept(&["w1", "w2"], &["w1"], &["w1", "w2"], &["w2"], &[])]
#[case::a_removed_nomination_removes_that_copy(&["w2"], &["w1", "w2"], &["w1", "w2"], &[], &["w1"])]
#[case::unreachable_workers_are_left_alone(&["w2"], &["w1"], &["w2"], &["w2"], &[])]
#[case::nominated_but_unreachable_waits(&["w1", "w2"], &[], &["w1"], &["w1"], &[])]
fn copies_follow_the_nomination_on_connected_workers(
    #[case] nominated: &[&str],
    #[case] holders: &[&str],
    #[case] active: &[&str],
    #[case] create: &[&str],
    #[case] remove: &[&str],
) {
    let changes = copy_changes(&names(nominated), &set(holders), &set(active));
    assert_eq!(
        changes,
        CopyChanges {
            create: names(create),
            remove: names(remove),
        }
    );
}
