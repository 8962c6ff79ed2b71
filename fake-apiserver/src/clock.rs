//! One clock for timestamps and timers.
//!
//! Wall time is a fixed start instant plus the time elapsed on tokio's clock. Under a paused tokio
//! runtime (`#[tokio::test(start_paused = true)]`) tokio's clock is virtual: it jumps forward when every
//! task is idle, so a 30-minute wait takes no real time and two runs produce the same timestamps.
//! Timers go through [`Clock::sleep`], which is tokio's, so they follow the same virtual time.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    start_wall: Timestamp,
    start: tokio::time::Instant,
    /// A clock that stands still: [`Clock::stopped_at`].
    stopped: bool,
}

impl Clock {
    /// A clock whose wall time starts at `start` now, and moves with tokio's (possibly paused) clock.
    pub fn starting_at(start: Timestamp) -> Self {
        Clock {
            inner: Arc::new(Inner {
                start_wall: start,
                start: tokio::time::Instant::now(),
                stopped: false,
            }),
        }
    }

    /// A clock whose wall time stays at `at`: the store's clock while a request's write runs again
    /// after its admission webhooks, so that every run stamps the time of the first.
    pub fn stopped_at(at: Timestamp) -> Self {
        Clock {
            inner: Arc::new(Inner {
                start_wall: at,
                start: tokio::time::Instant::now(),
                stopped: true,
            }),
        }
    }

    /// A clock that starts at the system's wall time.
    pub fn system() -> Self {
        Self::starting_at(Timestamp::now())
    }

    /// The wall time this clock started at and the tokio instant it started at, for other
    /// components that must keep the same time (a controller next to this server).
    pub fn anchor(&self) -> (Timestamp, tokio::time::Instant) {
        (self.inner.start_wall, self.inner.start)
    }

    pub fn now(&self) -> Timestamp {
        if self.inner.stopped {
            return self.inner.start_wall;
        }
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.inner.start);
        let elapsed = jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX);
        self.inner
            .start_wall
            .saturating_add(elapsed)
            .unwrap_or(self.inner.start_wall)
    }

    /// `metav1.Time`: RFC 3339 in UTC with whole seconds.
    pub fn now_rfc3339(&self) -> String {
        format_time(self.now())
    }

    /// `metav1.MicroTime`: RFC 3339 in UTC with microseconds.
    pub fn now_micro(&self) -> String {
        self.now().strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
    }

    pub async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await
    }

    pub async fn sleep_until(&self, deadline: tokio::time::Instant) {
        tokio::time::sleep_until(deadline).await
    }
}

pub fn format_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn virtual_time_moves_timestamps_without_waiting() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let clock = Clock::starting_at(start);
        assert_eq!(clock.now_rfc3339(), "2026-01-01T00:00:00Z");
        clock.sleep(Duration::from_secs(30 * 60)).await;
        assert_eq!(clock.now_rfc3339(), "2026-01-01T00:30:00Z");
        assert_eq!(clock.now_micro(), "2026-01-01T00:30:00.000000Z");
    }
}
