//! Deliberately broken autoscalers. Each variant breaks exactly one rule of the contract Kueue
//! relies on (`shared/reference/conformance.md`), and otherwise behaves like the reference classes.
//! They exist so that the conformance suite can prove it catches each broken rule.
//!
//! This module names them; how each one deviates from the reference is written in one place,
//! the engine's hooks (`engine/broken.rs`).

use serde::{Deserialize, Serialize};

/// A broken variant, named in kebab-case (`broken: provisioned-and-failed`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Broken {
    /// Sets `Failed=True` beside `Provisioned=True` when it provisions.
    ProvisionedAndFailed,
    /// Sets `BookingExpired=True` at pick-up, before anything is provisioned.
    BookingExpiredBeforeProvisioned,
    /// Keeps a condition's first lastTransitionTime when its status changes.
    StaleTransitionTime,
    /// Accepts requests and then never says anything else.
    NeverLeavesAccepted,
    /// An atomic class that adds the nodes it can when not all of them fit, and leaves them.
    PartialScaleUp,
    /// Keeps a deleted request's booking and finishes its scale-up.
    IgnoresDeletion,
    /// Provisions a request after it has failed.
    RevivesFailed,
    /// Writes reasons in snake_case.
    SnakeCaseReasons,
    /// Reports a request provisioned although its PodTemplates are missing.
    ProvisionsWithoutTemplates,
    /// Takes `Provisioned=True` back 10 seconds later, while its booking still holds.
    TakesBackProvisioned,
    /// Reports a request for pods that can never fit as provisioned (booking nothing).
    ProvisionsUnfit,
    /// Keeps a request whose PodTemplates are missing waiting instead of failing it.
    WaitsWithoutTemplates,
    /// Acts only on a 45-second loop, and provisions a request after it has failed.
    RevivesFailedOnASlowLoop,
}

impl Broken {
    pub const ALL: [Broken; 13] = [
        Broken::ProvisionedAndFailed,
        Broken::BookingExpiredBeforeProvisioned,
        Broken::StaleTransitionTime,
        Broken::NeverLeavesAccepted,
        Broken::PartialScaleUp,
        Broken::IgnoresDeletion,
        Broken::RevivesFailed,
        Broken::SnakeCaseReasons,
        Broken::ProvisionsWithoutTemplates,
        Broken::TakesBackProvisioned,
        Broken::ProvisionsUnfit,
        Broken::WaitsWithoutTemplates,
        Broken::RevivesFailedOnASlowLoop,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Broken::ProvisionedAndFailed => "provisioned-and-failed",
            Broken::BookingExpiredBeforeProvisioned => "booking-expired-before-provisioned",
            Broken::StaleTransitionTime => "stale-transition-time",
            Broken::NeverLeavesAccepted => "never-leaves-accepted",
            Broken::PartialScaleUp => "partial-scale-up",
            Broken::IgnoresDeletion => "ignores-deletion",
            Broken::RevivesFailed => "revives-failed",
            Broken::SnakeCaseReasons => "snake-case-reasons",
            Broken::ProvisionsWithoutTemplates => "provisions-without-templates",
            Broken::TakesBackProvisioned => "takes-back-provisioned",
            Broken::ProvisionsUnfit => "provisions-unfit",
            Broken::WaitsWithoutTemplates => "waits-without-templates",
            Broken::RevivesFailedOnASlowLoop => "revives-failed-on-a-slow-loop",
        }
    }

    /// The rule of the contract this variant breaks, in the conformance suite's words.
    pub fn rule(self) -> &'static str {
        use api::contract as rule;
        match self {
            Broken::ProvisionedAndFailed => rule::NEVER_PROVISIONED_AND_FAILED,
            Broken::BookingExpiredBeforeProvisioned => rule::BOOKING_EXPIRES_AFTER_PROVISIONED,
            Broken::StaleTransitionTime => rule::TRANSITION_TIME_MOVES,
            Broken::NeverLeavesAccepted => rule::PROGRESS_IS_VISIBLE,
            Broken::PartialScaleUp => rule::NO_PARTIAL_CAPACITY,
            Broken::IgnoresDeletion => rule::DELETION_CANCELS,
            Broken::RevivesFailed => rule::FAILED_IS_TERMINAL,
            Broken::SnakeCaseReasons => rule::REASONS_ARE_CAMEL_CASE,
            Broken::ProvisionsWithoutTemplates => rule::MISSING_TEMPLATES_HANDLED,
            Broken::TakesBackProvisioned => rule::PROVISIONED_IS_KEPT,
            Broken::ProvisionsUnfit => rule::UNFIT_NEVER_PROVISIONED,
            Broken::WaitsWithoutTemplates => rule::MISSING_TEMPLATES_HANDLED,
            Broken::RevivesFailedOnASlowLoop => rule::FAILED_IS_TERMINAL,
        }
    }

    /// The conformance suite's timeouts (`--timeout NAME=DURATION`) under which an earlier suite
    /// let this variant pass: the mutants run plays the variant with them, so that the suite proves
    /// it no longer depends on them.
    pub fn blinding_timeouts(self) -> &'static [(&'static str, &'static str)] {
        match self {
            // A wait for freed capacity longer than the booking (10m) sees it freed anyway.
            Broken::IgnoresDeletion => &[("retry", "15m")],
            // A watch shorter than the class's loop ends before the revival.
            Broken::RevivesFailedOnASlowLoop => &[("hold", "1s")],
            _ => &[],
        }
    }

    /// By name, with the known names in the error.
    pub fn from_name(name: &str) -> Result<Broken, String> {
        Broken::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Broken::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown broken variant `{name}` (known: {})",
                    known.join(", ")
                )
            })
    }
}

/// A CamelCase reason in snake_case (`CapacityIsFound` -> `capacity_is_found`).
pub fn snake_case(reason: &str) -> String {
    let mut out = String::new();
    for (i, c) in reason.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_what_serde_reads() {
        for b in Broken::ALL {
            assert_eq!(Broken::from_name(b.name()), Ok(b));
            let read: Broken = serde_yaml::from_str(b.name()).expect("serde name");
            assert_eq!(read, b);
        }
        let err = Broken::from_name("nope").expect_err("unknown");
        assert!(err.contains("known: provisioned-and-failed"), "{err}");
    }

    #[test]
    fn blinding_timeouts_are_durations_the_suite_reads() {
        let blinded: Vec<(&str, &[(&str, &str)])> = Broken::ALL
            .iter()
            .map(|b| (b.name(), b.blinding_timeouts()))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        assert_eq!(
            blinded,
            [
                ("ignores-deletion", &[("retry", "15m")][..]),
                ("revives-failed-on-a-slow-loop", &[("hold", "1s")][..]),
            ]
        );
        for (_, timeouts) in blinded {
            for (_, value) in timeouts {
                api::config::GoDuration::parse(value).expect("a Go duration");
            }
        }
    }

    #[test]
    fn snake_case_reasons() {
        assert_eq!(snake_case("CapacityIsFound"), "capacity_is_found");
        assert_eq!(snake_case("Accepted"), "accepted");
    }
}
