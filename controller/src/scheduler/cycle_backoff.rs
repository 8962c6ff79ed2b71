//! How long the scheduler waits after a cycle, as Kueue's scheduler loop does
//! (`pkg/util/wait`): a cycle that admitted something is followed at once by the next; a cycle
//! that admitted nothing (only preemptions issued or pending messages written) slows the loop
//! down, 1 ms at first and doubling up to 10 ms, until a cycle admits again.
//!
//! The pause is what lets the controller's caches catch up with the writes it just made: the
//! victims it evicted, the workloads that finished meanwhile. Without it, a controller on a
//! zero-latency API server keeps retrying preemptions against versions it has not yet seen.

use std::time::Duration;

/// The first pause after a cycle that admitted nothing.
pub const INITIAL: Duration = Duration::from_millis(1);
/// The longest pause.
pub const MAX: Duration = Duration::from_millis(10);

/// The scheduler loop's speed: the pause owed after the last cycle.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CycleBackoff {
    /// `None` after a cycle that admitted something (keep going).
    pause: Option<Duration>,
}

impl CycleBackoff {
    /// Records a cycle's outcome and returns the pause before the next one (zero: go on).
    pub fn after_cycle(&mut self, admitted: bool) -> Duration {
        self.pause = if admitted {
            None
        } else {
            Some(match self.pause {
                None => INITIAL,
                Some(p) => (p * 2).min(MAX),
            })
        };
        self.pause.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::admitting_cycles_never_wait(&[true, true, true], &[0, 0, 0])]
    #[case::idle_cycles_double_up_to_ten_ms(&[false, false, false, false, false, false], &[1, 2, 4, 8, 10, 10])]
    #[case::an_admission_resets_the_pause(&[false, false, false, true, false], &[1, 2, 4, 0, 1])]
    fn pauses_follow_kueues_speedy_backoff(#[case] admitted: &[bool], #[case] millis: &[u64]) {
        let mut backoff = CycleBackoff::default();
        let pauses: Vec<u64> = admitted
            .iter()
            .map(|a| backoff.after_cycle(*a).as_millis() as u64)
            .collect();
        assert_eq!(pauses, millis);
    }
}
