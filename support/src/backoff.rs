//! The pause between a watch's failed attempts, the same on every run.

use std::time::Duration;

/// kube-runtime's default pause between a watch's failed attempts (800 ms, doubling up to 30 s,
/// reset by the next event) without its random jitter: on virtual time, the same run takes the
/// same steps every time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(800);
    const MAX: Duration = Duration::from_secs(30);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        WatchBackoff { next: Self::FIRST }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let pause = self.next;
        self.next = (pause * 2).min(Self::MAX);
        Some(pause)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::utils::Backoff;

    #[test]
    fn pauses_double_up_to_thirty_seconds_and_start_over_on_reset() {
        let mut b = WatchBackoff::default();
        let pauses: Vec<u64> = b.by_ref().take(8).map(|d| d.as_millis() as u64).collect();
        assert_eq!(pauses, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(800)));
    }
}
