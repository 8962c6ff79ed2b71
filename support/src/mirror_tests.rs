//! The mirror against the event sequences a watch delivers: first lists, re-lists after the watch
//! was down, late events, and deletes.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher::Event;

use super::{Changed, Mirror, key_of};

fn cm(name: &str, uid: &str, rv: u64) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm.metadata.uid = Some(uid.into());
    cm.metadata.resource_version = Some(rv.to_string());
    cm
}

/// A change as `name: old rv -> new rv` (`-` where absent), to compare whole lists readably.
fn show(changes: &[Changed<ConfigMap>]) -> Vec<String> {
    let rv = |obj: &Option<Arc<ConfigMap>>| {
        obj.as_ref().map_or("-".to_owned(), |o| {
            o.metadata.resource_version.clone().unwrap()
        })
    };
    changes
        .iter()
        .map(|(old, new)| {
            let name = new.as_ref().or(old.as_ref()).unwrap().metadata.name.clone();
            format!("{}: {} -> {}", name.unwrap(), rv(old), rv(new))
        })
        .collect()
}

/// A whole (re-)list of `objs`; returns what each event reported.
fn relist(mirror: &mut Mirror<ConfigMap>, objs: Vec<ConfigMap>) -> Vec<Changed<ConfigMap>> {
    let mut changes = mirror.apply_event(Event::Init);
    for obj in objs {
        changes.extend(mirror.apply_event(Event::InitApply(obj)));
    }
    changes.extend(mirror.apply_event(Event::InitDone));
    changes
}

fn rv_of(mirror: &Mirror<ConfigMap>, name: &str) -> Option<String> {
    mirror
        .get(&format!("ns/{name}"))
        .map(|o| o.metadata.resource_version.clone().unwrap())
}

#[test]
fn the_first_list_adds_everything_in_key_order_and_syncs() {
    let mut mirror = Mirror::default();
    assert!(!mirror.is_synced());
    let changes = relist(&mut mirror, vec![cm("b", "ub", 2), cm("a", "ua", 1)]);
    assert_eq!(show(&changes), ["a: - -> 1", "b: - -> 2"]);
    assert!(mirror.is_synced());
    assert_eq!(mirror.keys().collect::<Vec<_>>(), ["ns/a", "ns/b"]);
}

#[test]
fn a_list_counts_only_once_complete() {
    let mut mirror = Mirror::default();
    relist(&mut mirror, vec![cm("a", "ua", 1)]);
    assert!(mirror.apply_event(Event::Init).is_empty());
    assert!(
        mirror
            .apply_event(Event::InitApply(cm("b", "ub", 5)))
            .is_empty()
    );
    // Mid re-list the old view stands.
    assert_eq!(mirror.keys().collect::<Vec<_>>(), ["ns/a"]);
    assert!(mirror.is_synced());
}

#[test]
fn a_relist_drops_what_disappeared_during_it() {
    let mut mirror = Mirror::default();
    relist(
        &mut mirror,
        vec![cm("a", "ua", 1), cm("b", "ub", 2), cm("c", "uc", 3)],
    );
    // The watch was down while b was deleted, c changed and d created.
    let changes = relist(
        &mut mirror,
        vec![cm("a", "ua", 1), cm("c", "uc", 7), cm("d", "ud", 8)],
    );
    assert_eq!(show(&changes), ["b: 2 -> -", "c: 3 -> 7", "d: - -> 8"]);
    assert_eq!(rv_of(&mirror, "b"), None);
    assert_eq!(mirror.len(), 3);
}

#[test]
fn a_relist_keeps_a_stored_newer_version() {
    let mut mirror = Mirror::default();
    relist(&mut mirror, vec![cm("a", "ua", 1)]);
    // The owner's own write returned version 9 before the re-list's older answer arrived.
    assert!(mirror.apply(cm("a", "ua", 9)));
    let changes = relist(&mut mirror, vec![cm("a", "ua", 4)]);
    assert!(changes.is_empty(), "{:?}", show(&changes));
    assert_eq!(rv_of(&mirror, "a").as_deref(), Some("9"));
}

#[test]
fn a_relist_replaces_an_object_recreated_under_the_same_name() {
    let mut mirror = Mirror::default();
    relist(&mut mirror, vec![cm("a", "first", 9)]);
    let changes = relist(&mut mirror, vec![cm("a", "second", 4)]);
    assert_eq!(show(&changes), ["a: 9 -> 4"]);
    let stored = mirror.get("ns/a").unwrap();
    assert_eq!(stored.metadata.uid.as_deref(), Some("second"));
}

#[test]
fn a_late_stale_apply_does_not_undo_a_newer_one() {
    let mut mirror = Mirror::default();
    assert_eq!(
        show(&mirror.apply_event(Event::Apply(cm("a", "ua", 10)))),
        ["a: - -> 10"]
    );
    assert!(
        mirror
            .apply_event(Event::Apply(cm("a", "ua", 9)))
            .is_empty()
    );
    assert!(
        mirror
            .apply_event(Event::Apply(cm("a", "ua", 10)))
            .is_empty()
    );
    assert_eq!(rv_of(&mirror, "a").as_deref(), Some("10"));
    assert_eq!(
        show(&mirror.apply_event(Event::Apply(cm("a", "ua", 11)))),
        ["a: 10 -> 11"]
    );
}

#[test]
fn a_delete_reports_what_was_stored() {
    let mut mirror = Mirror::default();
    mirror.apply(cm("a", "ua", 3));
    let changes = mirror.apply_event(Event::Delete(cm("a", "ua", 4)));
    assert_eq!(show(&changes), ["a: 3 -> -"]);
    assert!(mirror.is_empty());
}

#[test]
fn a_delete_of_an_unknown_object_reports_nothing() {
    let mut mirror = Mirror::default();
    mirror.apply(cm("a", "ua", 3));
    assert!(
        mirror
            .apply_event(Event::Delete(cm("z", "uz", 4)))
            .is_empty()
    );
    assert_eq!(mirror.len(), 1);
}

#[test]
fn keys_are_namespace_slash_name_or_name_when_cluster_scoped() {
    let mut cluster_scoped = cm("a", "ua", 1);
    cluster_scoped.metadata.namespace = None;
    assert_eq!(key_of(&cm("a", "ua", 1)), "ns/a");
    assert_eq!(key_of(&cluster_scoped), "a");
}

#[test]
fn a_late_delete_of_an_earlier_object_of_the_name_keeps_the_new_one() {
    let mut mirror = Mirror::default();
    relist(&mut mirror, vec![cm("a", "u1", 1)]);
    // Deleted and created again by the mirror's owner, whose write response came first.
    assert!(mirror.apply(cm("a", "u2", 3)));
    let changes = mirror.apply_event(Event::Delete(cm("a", "u1", 2)));
    assert!(show(&changes).is_empty(), "{:?}", show(&changes));
    assert_eq!(rv_of(&mirror, "a").as_deref(), Some("3"));
    let changes = mirror.apply_event(Event::Delete(cm("a", "u2", 4)));
    assert_eq!(show(&changes), ["a: 3 -> -"]);
}
