//! Wall time anchored to tokio's clock.
//!
//! Against a real cluster this is the system time. In an embedded world the anchor is the fake API
//! server's, and tokio's clock is paused, so condition timestamps, backoffs and requeue times follow
//! virtual time exactly as the server's own timestamps do.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start_wall: Timestamp,
    start: tokio::time::Instant,
}

impl Clock {
    /// Wall time `start_wall` at tokio instant `start`.
    pub fn anchored(start_wall: Timestamp, start: tokio::time::Instant) -> Self {
        Clock { start_wall, start }
    }

    /// The system's wall time (moves with tokio's clock from now on).
    pub fn system() -> Self {
        Self::anchored(Timestamp::now(), tokio::time::Instant::now())
    }

    pub fn now(&self) -> Timestamp {
        self.at(tokio::time::Instant::now())
    }

    /// The wall time of a tokio instant.
    pub fn at(&self, instant: tokio::time::Instant) -> Timestamp {
        let elapsed = SignedDuration::try_from(instant.saturating_duration_since(self.start))
            .unwrap_or(SignedDuration::MAX);
        self.start_wall
            .saturating_add(elapsed)
            .unwrap_or(self.start_wall)
    }

    /// The tokio instant of a wall time (now, if it is in the past).
    pub fn instant_of(&self, t: Timestamp) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        let ahead = t.duration_since(self.now());
        match Duration::try_from(ahead) {
            Ok(d) => now + d,
            Err(_) => now,
        }
    }

    /// `metav1.Time` now, truncated to whole seconds as the API stores it, so that what the
    /// controller compares is what it wrote.
    pub fn now_time(&self) -> Time {
        Time(truncate_seconds(self.now()))
    }
}

/// Drops the sub-second part.
pub fn truncate_seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_virtual_time() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let clock = Clock::anchored(start, tokio::time::Instant::now());
        tokio::time::sleep(Duration::from_millis(90_500)).await;
        assert_eq!(clock.now().to_string(), "2026-01-01T00:01:30.5Z");
        assert_eq!(clock.now_time().0.to_string(), "2026-01-01T00:01:30Z");
        let later: Timestamp = "2026-01-01T00:02:00Z".parse().expect("time");
        assert_eq!(
            clock.instant_of(later) - tokio::time::Instant::now(),
            Duration::from_millis(29_500)
        );
    }
}
