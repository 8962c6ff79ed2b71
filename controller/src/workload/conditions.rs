//! Conditions as `apimachinery/pkg/api/meta` handles them: set by type, keeping the transition time
//! when the status does not change.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

pub fn is_false(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "False")
}

/// A condition to set.
pub fn new(type_: &str, status: bool, reason: &str, message: &str, now: &Time) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: truncate_message(message),
        last_transition_time: now.clone(),
        observed_generation: None,
    }
}

/// Sets `new` by type. The transition time changes only with the status. Returns whether anything
/// changed.
pub fn set(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(new);
            true
        }
        Some(old) => {
            if old.status == new.status {
                new.last_transition_time = old.last_transition_time.clone();
            }
            if *old == new {
                return false;
            }
            *old = new;
            true
        }
    }
}

pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Kueue truncates condition messages to 32 KiB.
pub fn truncate_message(message: &str) -> String {
    truncate(message, 32 * 1024)
}

/// `message` cut to at most `max` bytes, ending in `...` when cut, never inside a character.
pub fn truncate(message: &str, max: usize) -> String {
    if message.len() <= max {
        return message.to_owned();
    }
    let mut end = max.saturating_sub(3);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    #[test]
    fn same_status_keeps_the_transition_time() {
        let mut conds = vec![];
        assert!(set(
            &mut conds,
            new("A", false, "R1", "m1", &at("2026-01-01T00:00:00Z"))
        ));
        assert!(set(
            &mut conds,
            new("A", false, "R2", "m2", &at("2026-01-01T00:01:00Z"))
        ));
        assert_eq!(conds[0].last_transition_time, at("2026-01-01T00:00:00Z"));
        assert_eq!(conds[0].reason, "R2");
        assert!(!set(
            &mut conds,
            new("A", false, "R2", "m2", &at("2026-01-01T00:02:00Z"))
        ));
        assert!(set(
            &mut conds,
            new("A", true, "R2", "m2", &at("2026-01-01T00:03:00Z"))
        ));
        assert_eq!(conds[0].last_transition_time, at("2026-01-01T00:03:00Z"));
    }
}
