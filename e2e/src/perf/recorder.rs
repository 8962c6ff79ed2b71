//! What a benchmark run observed, and the summary Kueue's runner would write from it.
//!
//! The definitions are Kueue's (`test/performance/scheduler/runner/recorder`):
//! - a ClusterQueue class's usage is the CPU its queues' workloads held while admitted, integrated
//!   over time, divided by the queues' nominal quota times the span of the run;
//! - a Workload's time to admission runs from its creation to the last time it became Admitted
//!   (a preempted workload counts from creation to its final admission).
//!
//! Times are virtual and exact to the millisecond: the run observes each change at the instant it
//! happens. Kueue's runner samples usage from ClusterQueue status, which Kueue writes at most once
//! a second, and reads second-truncated timestamps; here the same quantities are measured exactly
//! from each workload's admission and end.

use std::collections::BTreeMap;
use std::time::Duration;

/// What became of a workload with one observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    None,
    /// It became Admitted: its run starts now.
    Admitted,
    /// It lost its admission (evicted) before finishing.
    Unadmitted,
}

/// One observed state of a Workload.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkloadState {
    pub admitted: bool,
    pub evicted: bool,
    pub finished: bool,
    /// A fingerprint of its `Preempted` condition while True: a new one is a preemption written.
    pub preempted: Option<u64>,
}

#[derive(Debug)]
struct WorkloadRecord {
    class: String,
    queue: String,
    /// CPU it holds while admitted, in milli-CPU.
    request_milli: i64,
    created: Duration,
    /// When its current admission began.
    admitted_since: Option<Duration>,
    last: WorkloadState,
    time_to_admission: Option<Duration>,
    evictions: u32,
    preemptions: u32,
    finished: Option<Duration>,
}

#[derive(Debug)]
struct QueueRecord {
    class: String,
    nominal_milli: i64,
    /// CPU held by admitted workloads integrated over time, in milli-CPU × milliseconds.
    used: i128,
}

#[derive(Debug, Default)]
pub struct Recorder {
    workloads: BTreeMap<String, WorkloadRecord>,
    queues: BTreeMap<String, QueueRecord>,
    finished: usize,
    last_finish: Duration,
}

impl Recorder {
    /// A ClusterQueue to watch, with its nominal quota in milli-CPU.
    pub fn add_queue(&mut self, name: &str, class: &str, nominal_milli: i64) {
        self.queues.insert(
            name.to_string(),
            QueueRecord {
                class: class.to_string(),
                nominal_milli,
                used: 0,
            },
        );
    }

    /// A workload the generator created at `at` in `queue`, holding `request_milli` CPU once
    /// admitted.
    pub fn created(
        &mut self,
        key: &str,
        queue: &str,
        class: &str,
        request_milli: i64,
        at: Duration,
    ) {
        self.workloads.insert(
            key.to_string(),
            WorkloadRecord {
                class: class.to_string(),
                queue: queue.to_string(),
                request_milli,
                created: at,
                admitted_since: None,
                last: WorkloadState::default(),
                time_to_admission: None,
                evictions: 0,
                preemptions: 0,
                finished: None,
            },
        );
    }

    /// A workload seen at `at`. Workloads the generator did not create are ignored.
    pub fn observe_workload(&mut self, key: &str, at: Duration, now: WorkloadState) -> Transition {
        let Some(record) = self.workloads.get_mut(key) else {
            return Transition::None;
        };
        let before = record.last;
        record.last = now;
        if now.evicted && !before.evicted {
            record.evictions += 1;
        }
        if now.preempted.is_some() && now.preempted != before.preempted {
            record.preemptions += 1;
        }
        // An admission ends when the workload finishes or loses it.
        let holding = now.admitted && !now.finished;
        if !holding && let Some(since) = record.admitted_since.take() {
            let held = at.saturating_sub(since).as_millis() as i128;
            if let Some(q) = self.queues.get_mut(&record.queue) {
                q.used += i128::from(record.request_milli) * held;
            }
        }
        if now.finished && record.finished.is_none() {
            record.finished = Some(at);
            self.finished += 1;
            self.last_finish = self.last_finish.max(at);
        }
        if now.finished {
            return Transition::None;
        }
        match (before.admitted, now.admitted) {
            (false, true) => {
                record.time_to_admission = Some(at.saturating_sub(record.created));
                record.admitted_since = Some(at);
                Transition::Admitted
            }
            (true, false) => Transition::Unadmitted,
            _ => Transition::None,
        }
    }

    /// How many of the created workloads have finished.
    pub fn finished(&self) -> usize {
        self.finished
    }

    pub fn created_count(&self) -> usize {
        self.workloads.len()
    }

    /// Counts of created workloads that are admitted and not finished, and that are waiting.
    pub fn running_and_waiting(&self) -> (usize, usize) {
        let open = self.workloads.values().filter(|w| w.finished.is_none());
        open.fold((0, 0), |(running, waiting), w| {
            if w.last.admitted {
                (running + 1, waiting)
            } else {
                (running, waiting + 1)
            }
        })
    }

    pub fn summary(&self) -> Summary {
        let mut queue_classes: BTreeMap<String, QueueClassSummary> = BTreeMap::new();
        for q in self.queues.values() {
            let class = queue_classes
                .entry(q.class.clone())
                .or_insert(QueueClassSummary {
                    queues: 0,
                    used: 0,
                    nominal_milli: 0,
                    span: self.last_finish,
                });
            class.queues += 1;
            class.used += q.used;
            class.nominal_milli += q.nominal_milli;
        }
        let mut workload_classes: BTreeMap<String, WorkloadClassSummary> = BTreeMap::new();
        for w in self.workloads.values() {
            let class = workload_classes.entry(w.class.clone()).or_default();
            class.count += 1;
            class.evictions += w.evictions;
            class.preemptions += w.preemptions;
            if let Some(t) = w.time_to_admission {
                class.admitted += 1;
                class.total_time_to_admission += t;
            }
            if let Some(f) = w.finished {
                class.total_time_to_finish += f.saturating_sub(w.created);
            }
        }
        Summary {
            duration: self.last_finish,
            queue_classes,
            workload_classes,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Virtual time from the start to the last workload finishing.
    pub duration: Duration,
    pub queue_classes: BTreeMap<String, QueueClassSummary>,
    pub workload_classes: BTreeMap<String, WorkloadClassSummary>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QueueClassSummary {
    pub queues: usize,
    used: i128,
    nominal_milli: i64,
    /// From the start (the queues' creation) to the last workload's end.
    span: Duration,
}

impl QueueClassSummary {
    /// Kueue's usage: CPU used over time, as a percentage of the nominal quota over the run.
    pub fn usage_percent(&self) -> f64 {
        let span = self.span.as_millis() as f64;
        if span == 0.0 || self.nominal_milli == 0 {
            return 0.0;
        }
        self.used as f64 * 100.0 / (self.nominal_milli as f64 * span)
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadClassSummary {
    pub count: usize,
    pub admitted: usize,
    pub evictions: u32,
    /// Preemptions written to its workloads; more than `evictions` means a victim already on
    /// its way out was preempted again.
    pub preemptions: u32,
    total_time_to_admission: Duration,
    total_time_to_finish: Duration,
}

impl WorkloadClassSummary {
    pub fn average_time_to_admission(&self) -> Duration {
        average(self.total_time_to_admission, self.admitted)
    }

    pub fn average_time_to_finish(&self) -> Duration {
        average(self.total_time_to_finish, self.count)
    }
}

fn average(total: Duration, count: usize) -> Duration {
    match u32::try_from(count) {
        Ok(n) if n > 0 => total / n,
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADMITTED: WorkloadState = WorkloadState {
        admitted: true,
        evicted: false,
        finished: false,
        preempted: None,
    };
    const WAITING: WorkloadState = WorkloadState {
        admitted: false,
        evicted: false,
        finished: false,
        preempted: None,
    };
    const EVICTED: WorkloadState = WorkloadState {
        admitted: false,
        evicted: true,
        finished: false,
        preempted: None,
    };
    const FINISHED: WorkloadState = WorkloadState {
        admitted: true,
        evicted: false,
        finished: true,
        preempted: None,
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn time_to_admission_counts_from_creation_to_the_last_admission() {
        let mut r = Recorder::default();
        r.created("ns/a", "ns", "small", 1000, ms(100));
        assert_eq!(
            r.observe_workload("ns/a", ms(100), WAITING),
            Transition::None
        );
        assert_eq!(
            r.observe_workload("ns/a", ms(400), ADMITTED),
            Transition::Admitted
        );
        assert_eq!(
            r.observe_workload("ns/a", ms(500), EVICTED),
            Transition::Unadmitted
        );
        assert_eq!(
            r.observe_workload("ns/a", ms(900), ADMITTED),
            Transition::Admitted
        );
        assert_eq!(
            r.observe_workload("ns/a", ms(1900), FINISHED),
            Transition::None
        );
        r.created("ns/b", "ns", "small", 1000, ms(200));
        r.observe_workload("ns/b", ms(300), ADMITTED);
        r.observe_workload("ns/b", ms(600), FINISHED);
        // Not the generator's: ignored.
        assert_eq!(
            r.observe_workload("ns/x", ms(1), ADMITTED),
            Transition::None
        );

        let s = r.summary();
        let small = &s.workload_classes["small"];
        assert_eq!((small.count, small.admitted, small.evictions), (2, 2, 1));
        // (800 + 100) / 2
        assert_eq!(small.average_time_to_admission(), ms(450));
        // (1800 + 400) / 2
        assert_eq!(small.average_time_to_finish(), ms(1100));
        assert_eq!(s.duration, ms(1900));
        assert_eq!(r.finished(), 2);
    }

    #[test]
    fn usage_is_cpu_held_while_admitted_against_nominal_quota_over_the_run() {
        let mut r = Recorder::default();
        r.add_queue("q1", "cq", 2000);
        r.add_queue("q2", "cq", 2000);
        // 2 CPU from 1 s to 3 s: 4 CPU·s.
        r.created("q1/a", "q1", "x", 2000, ms(0));
        r.observe_workload("q1/a", ms(1000), ADMITTED);
        r.observe_workload("q1/a", ms(3000), FINISHED);
        // 1 CPU from 0.5 s, evicted at 1 s, again from 2 s to 3.5 s: 2 CPU·s.
        r.created("q2/b", "q2", "x", 1000, ms(0));
        r.observe_workload("q2/b", ms(500), ADMITTED);
        r.observe_workload("q2/b", ms(1000), EVICTED);
        r.observe_workload("q2/b", ms(2000), ADMITTED);
        r.observe_workload("q2/b", ms(3500), FINISHED);
        // Seeing it finished again changes nothing.
        r.observe_workload("q2/b", ms(4000), FINISHED);
        let usage = r.summary().queue_classes["cq"].usage_percent();
        // 6 CPU·s used of 4 CPU over the 3.5 s run.
        assert!((usage - 600.0 / 14.0).abs() < 1e-9, "{usage}");
    }

    #[test]
    fn running_and_waiting_counts_open_workloads() {
        let mut r = Recorder::default();
        for (key, state) in [
            ("a", ADMITTED),
            ("b", WAITING),
            ("c", FINISHED),
            ("d", EVICTED),
        ] {
            r.created(key, "q", "x", 1000, ms(0));
            r.observe_workload(key, ms(1), state);
        }
        assert_eq!(r.running_and_waiting(), (1, 2));
        assert_eq!(r.created_count(), 4);
    }
}
