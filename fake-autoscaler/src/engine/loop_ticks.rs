//! A class that acts only on a fixed loop, as Cluster Autoscaler does on its scan interval: ticks
//! every `period` from the first step (at a whole second), one step per tick. What happens between
//! two ticks waits for the next one.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// How late a step may come and still be its tick's: a timer fires a little after its time, and
/// the engine counts whole seconds.
const ON_TICK: SignedDuration = SignedDuration::from_secs(1);

pub(super) struct LoopTicks {
    period: Duration,
    /// The first tick, once the first step came.
    first: Option<Timestamp>,
    /// The index of the last tick a step ran on.
    last: i128,
}

impl LoopTicks {
    pub(super) fn new(period: Duration) -> Self {
        LoopTicks {
            period,
            first: None,
            last: 0,
        }
    }

    /// A step at `now`: allowed on a tick not yet stepped on, else the next tick.
    pub(super) fn enter(&mut self, now: Timestamp) -> Result<(), Timestamp> {
        let Some(first) = self.first else {
            self.first = Some(support::clock::truncate_seconds(now));
            return Ok(());
        };
        let index = self.index_before(first, now);
        let on_tick = now.duration_since(self.tick(first, index)) < ON_TICK;
        if on_tick && index > self.last {
            self.last = index;
            return Ok(());
        }
        Err(self.tick(first, index + 1))
    }

    /// The first tick at or after `t` (`t` itself before the first step).
    pub(super) fn at_or_after(&self, t: Timestamp) -> Timestamp {
        let Some(first) = self.first else {
            return t;
        };
        let index = self.index_before(first, t);
        let on_tick = self.tick(first, index) >= t;
        self.tick(first, if on_tick { index } else { index + 1 })
    }

    /// The index of the last tick at or before `t`.
    fn index_before(&self, first: Timestamp, t: Timestamp) -> i128 {
        let since = t.duration_since(first).as_nanos();
        since.div_euclid(self.period.as_nanos().max(1) as i128)
    }

    fn tick(&self, first: Timestamp, index: i128) -> Timestamp {
        let nanos = self.period.as_nanos() as i128 * index;
        let offset = SignedDuration::from_nanos_i128(nanos);
        first.saturating_add(offset).unwrap_or(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_767_225_600 + seconds).expect("time")
    }

    #[test]
    fn one_step_per_tick_and_what_comes_between_waits_for_the_next() {
        let mut ticks = LoopTicks::new(Duration::from_secs(45));
        assert_eq!(ticks.enter(at(0)), Ok(()), "the first step starts the loop");
        assert_eq!(ticks.enter(at(0)), Err(at(45)), "one step per tick");
        assert_eq!(ticks.enter(at(12)), Err(at(45)));
        assert_eq!(ticks.enter(at(45)), Ok(()));
        // The tick at 90s had nothing to do: what comes after it waits for the next.
        assert_eq!(ticks.enter(at(100)), Err(at(135)));
        assert_eq!(ticks.enter(at(135)), Ok(()));
        assert_eq!(ticks.enter(at(135)), Err(at(180)));
    }

    #[test]
    fn a_wake_moves_to_the_tick_it_falls_on_or_the_next() {
        let mut ticks = LoopTicks::new(Duration::from_secs(45));
        assert_eq!(
            ticks.at_or_after(at(10)),
            at(10),
            "no loop before the first step"
        );
        assert_eq!(ticks.enter(at(0)), Ok(()));
        assert_eq!(ticks.at_or_after(at(10)), at(45));
        assert_eq!(ticks.at_or_after(at(45)), at(45));
        assert_eq!(ticks.at_or_after(at(46)), at(90));
    }
}
