//! Programmable faults: latency, failing requests, dropped connections, closed watches and network
//! partitions. Chaos and MultiKueue tests build on these. All timing is on the server's clock, so
//! faults are virtual-time deterministic; fractions draw from a seeded generator.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::ApiError;

/// The verb of a request, as Kubernetes names it (lower case in YAML: `create`, `deletecollection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

/// What a fault is matched against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub verb: Option<Verb>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The request's `User-Agent` header, empty without one.
    pub user_agent: String,
}

/// When a dropped connection is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropWhen {
    /// Before the request is served: it never happened.
    Request,
    /// After it was served: it happened, but the client never hears so and cannot tell.
    Answer,
}

#[derive(Debug, Clone)]
enum Action {
    Fail(ApiError),
    Delay(Duration),
    Drop(DropWhen),
}

#[derive(Debug, Clone, Copy)]
enum Count {
    Always,
    Times(u32),
    Fraction(f64),
}

/// One fault: which requests it matches, what it does, and how often.
#[derive(Debug, Clone)]
pub struct FaultRule {
    verbs: Vec<Verb>,
    resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    user_agent: Option<String>,
    action: Action,
    count: Count,
    /// Kept by [`Faults::clear`]: a background a run lays under its own faults.
    lasting: bool,
    /// How many requests it has applied to.
    fired: u64,
}

impl FaultRule {
    /// Answer matching requests with `code` and a Status whose reason fits the code.
    pub fn fail(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            406 => "NotAcceptable",
            409 => "Conflict",
            410 => "Expired",
            413 => "RequestEntityTooLarge",
            415 => "UnsupportedMediaType",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        Self::fail_with(ApiError::new(
            code,
            reason,
            format!("injected fault: {reason}"),
        ))
    }

    /// Answer matching requests with 429 and `Retry-After`, as kube-apiserver's max-in-flight
    /// filter does when it is overloaded.
    pub fn throttle(retry_after_seconds: u32) -> Self {
        Self::fail_with(ApiError {
            details: Some(serde_json::json!({ "retryAfterSeconds": retry_after_seconds })),
            ..ApiError::new(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            )
        })
    }

    /// Drop the connection of matching requests, before they are served or after.
    pub fn drop_connection(when: DropWhen) -> Self {
        Self::new(Action::Drop(when))
    }

    /// Answer matching requests with exactly this error.
    pub fn fail_with(error: ApiError) -> Self {
        Self::new(Action::Fail(error))
    }

    /// Hold matching requests for `delay` (on the server's clock) before serving them.
    pub fn delay(delay: Duration) -> Self {
        Self::new(Action::Delay(delay))
    }

    fn new(action: Action) -> Self {
        FaultRule {
            verbs: Vec::new(),
            resource: None,
            namespace: None,
            name: None,
            user_agent: None,
            action,
            count: Count::Always,
            lasting: false,
            fired: 0,
        }
    }

    /// Only this verb (may be given several times).
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verbs.push(verb);
        self
    }

    /// Only this resource: a plural (`configmaps`) or `plural.group` (`jobs.batch`), with all its
    /// subresources; or one subresource of it (`jobs/status`, `jobs.batch/status`).
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Only requests whose `User-Agent` starts with this: one client's requests, not everyone's.
    pub fn user_agent(mut self, prefix: impl Into<String>) -> Self {
        self.user_agent = Some(prefix.into());
        self
    }

    /// Survive [`Faults::clear`] (removed only by [`Faults::remove`]).
    pub fn lasting(mut self) -> Self {
        self.lasting = true;
        self
    }

    /// Apply to the first `n` matching requests only.
    pub fn times(mut self, n: u32) -> Self {
        self.count = Count::Times(n);
        self
    }

    /// Apply to this fraction (0.0..=1.0) of matching requests, drawn from the seeded generator.
    pub fn fraction(mut self, f: f64) -> Self {
        let f = if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) };
        self.count = Count::Fraction(f);
        self
    }

    fn matches(&self, req: &RequestInfo) -> bool {
        if !self.verbs.is_empty() && !req.verb.is_some_and(|v| self.verbs.contains(&v)) {
            return false;
        }
        if let Some(r) = &self.resource {
            // `jobs/status` names a subresource; `jobs` the object and all its subresources.
            let (r, sub) = match r.split_once('/') {
                Some((r, sub)) => (r, Some(sub)),
                None => (r.as_str(), None),
            };
            let qualified = crate::error::qualified_resource(&req.group, &req.resource);
            if (r != req.resource && r != qualified)
                || sub.is_some_and(|sub| sub != req.subresource)
            {
                return false;
            }
        }
        self.namespace.as_ref().is_none_or(|n| *n == req.namespace)
            && self.name.as_ref().is_none_or(|n| *n == req.name)
            && self
                .user_agent
                .as_ref()
                .is_none_or(|prefix| req.user_agent.starts_with(prefix.as_str()))
    }
}

/// Identifies an injected fault, to remove it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FaultId(u64);

/// What the server must do with one request.
#[derive(Debug, Default)]
pub struct Verdict {
    pub delay: Duration,
    pub fail: Option<ApiError>,
    /// Drop the connection (this wins over `fail`).
    pub drop: Option<DropWhen>,
}

/// One request the faults judged, and what they decided for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub request: RequestInfo,
    /// The verdict as the `fake_apiserver::faults` trace prints it.
    pub verdict: String,
}

struct State {
    rules: Vec<(FaultId, FaultRule)>,
    next_id: u64,
    partitioned_until: Option<tokio::time::Instant>,
    rng: ChaCha8Rng,
    /// Every judgement since `keep_journal`, in the order drawn; `None` keeps none.
    journal: Option<Vec<Judgement>>,
}

/// The fault controls of one server. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    state: Arc<Mutex<State>>,
    on_close_watches: Arc<dyn Fn() + Send + Sync>,
}

impl Faults {
    pub(crate) fn new(seed: u64, on_close_watches: Arc<dyn Fn() + Send + Sync>) -> Self {
        Faults {
            state: Arc::new(Mutex::new(State {
                rules: Vec::new(),
                next_id: 0,
                partitioned_until: None,
                rng: ChaCha8Rng::seed_from_u64(seed),
                journal: None,
            })),
            on_close_watches,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn inject(&self, rule: FaultRule) -> FaultId {
        let mut s = self.lock();
        s.next_id += 1;
        let id = FaultId(s.next_id);
        s.rules.push((id, rule));
        id
    }

    /// Whether any rule is in place (requests skip fault matching when none is).
    pub fn has_rules(&self) -> bool {
        !self.lock().rules.is_empty()
    }

    /// How many requests the rule `id` has applied to; 0 once it is gone.
    pub fn fired(&self, id: FaultId) -> u64 {
        let s = self.lock();
        s.rules
            .iter()
            .find(|(i, _)| *i == id)
            .map_or(0, |(_, rule)| rule.fired)
    }

    pub fn remove(&self, id: FaultId) {
        self.lock().rules.retain(|(i, _)| *i != id);
    }

    /// Draw fractions from a generator seeded so from now on.
    pub fn reseed(&self, seed: u64) {
        self.lock().rng = ChaCha8Rng::seed_from_u64(seed);
    }

    /// Remove every rule but the lasting ones, and end any partition.
    pub fn clear(&self) {
        let mut s = self.lock();
        s.rules.retain(|(_, rule)| rule.lasting);
        s.partitioned_until = None;
    }

    /// From now on, keep every judgement (an empty journal, replacing any kept before): a seed's
    /// replay is checked by comparing them. Kept until `take_journal`, so only for bounded runs.
    pub fn keep_journal(&self) {
        self.lock().journal = Some(Vec::new());
    }

    /// The judgements kept since `keep_journal`, in the order drawn; keeping stops.
    pub fn take_journal(&self) -> Vec<Judgement> {
        self.lock().journal.take().unwrap_or_default()
    }

    /// End every open watch; clients must re-watch from their last resourceVersion.
    pub fn close_watches(&self) {
        (self.on_close_watches)();
    }

    /// Refuse every request (and cut open watches) for `duration` of the server's time.
    pub fn partition(&self, duration: Duration) {
        let now = tokio::time::Instant::now();
        // A practically endless partition rather than an overflow.
        let until = now
            .checked_add(duration)
            .unwrap_or(now + Duration::from_secs(100 * 365 * 24 * 3600));
        self.lock().partitioned_until = Some(until);
        self.close_watches();
    }

    /// End a partition early.
    pub fn heal(&self) {
        self.lock().partitioned_until = None;
    }

    pub fn is_partitioned(&self) -> bool {
        let mut s = self.lock();
        match s.partitioned_until {
            Some(until) if tokio::time::Instant::now() < until => true,
            Some(_) => {
                s.partitioned_until = None;
                false
            }
            None => false,
        }
    }

    /// Decide what happens to a request, consuming counted rules.
    pub fn judge(&self, req: &RequestInfo) -> Verdict {
        let mut s = self.lock();
        let mut verdict = Verdict::default();
        let mut spent = Vec::new();
        let State { rules, rng, .. } = &mut *s;
        for (id, rule) in rules.iter_mut() {
            if !rule.matches(req) {
                continue;
            }
            let applies = match &mut rule.count {
                Count::Always => true,
                Count::Times(0) => {
                    spent.push(*id);
                    false
                }
                Count::Times(n) => {
                    *n -= 1;
                    if *n == 0 {
                        spent.push(*id);
                    }
                    true
                }
                Count::Fraction(f) => rng.random_bool(*f),
            };
            if !applies {
                continue;
            }
            rule.fired += 1;
            match &rule.action {
                Action::Delay(d) => verdict.delay += *d,
                Action::Fail(e) => {
                    if verdict.fail.is_none() {
                        verdict.fail = Some(e.clone());
                    }
                }
                Action::Drop(when) => {
                    verdict.drop.get_or_insert(*when);
                }
            }
        }
        rules.retain(|(id, _)| !spent.contains(id));
        if let Some(journal) = &mut s.journal {
            journal.push(Judgement {
                request: req.clone(),
                verdict: format!("{verdict:?}"),
            });
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(verb: Verb, resource: &str, name: &str) -> RequestInfo {
        RequestInfo {
            verb: Some(verb),
            resource: resource.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    /// The reasons kube-apiserver's Status gives these codes (metav1.StatusReason).
    #[test]
    fn a_failure_has_the_reason_of_its_code() {
        for (code, reason) in [
            (401, "Unauthorized"),
            (410, "Expired"),
            (422, "Invalid"),
            (500, "InternalError"),
            (503, "ServiceUnavailable"),
        ] {
            let f = Faults::new(1, Arc::new(|| {}));
            f.inject(FaultRule::fail(code));
            let e = f.judge(&req(Verb::Get, "configmaps", "a")).fail;
            assert_eq!(e.map(|e| e.reason), Some(reason), "{code}");
        }
    }

    #[test]
    fn counted_rules_apply_n_times_then_vanish() {
        let f = Faults::new(1, Arc::new(|| {}));
        f.inject(
            FaultRule::fail(500)
                .verb(Verb::Create)
                .resource("configmaps")
                .times(2),
        );
        assert!(f.judge(&req(Verb::Get, "configmaps", "a")).fail.is_none());
        assert_eq!(
            f.judge(&req(Verb::Create, "configmaps", "a"))
                .fail
                .map(|e| e.code),
            Some(500)
        );
        assert!(
            f.judge(&req(Verb::Create, "configmaps", "b"))
                .fail
                .is_some()
        );
        assert!(
            f.judge(&req(Verb::Create, "configmaps", "c"))
                .fail
                .is_none()
        );
    }

    #[test]
    fn zero_times_and_nan_fractions_never_fire() {
        let f = Faults::new(1, Arc::new(|| {}));
        f.inject(FaultRule::fail(500).times(0));
        f.inject(FaultRule::fail(500).fraction(f64::NAN));
        for _ in 0..8 {
            assert!(f.judge(&req(Verb::Get, "pods", "p")).fail.is_none());
        }
    }

    #[test]
    fn fractions_are_reproducible_for_a_seed() {
        let draw = || {
            let f = Faults::new(7, Arc::new(|| {}));
            f.inject(FaultRule::fail(503).fraction(0.5));
            (0..64)
                .map(|_| f.judge(&req(Verb::Get, "pods", "p")).fail.is_some())
                .collect::<Vec<_>>()
        };
        let a = draw();
        assert_eq!(a, draw());
        assert!(a.iter().any(|x| *x) && a.iter().any(|x| !*x));
    }

    #[test]
    fn a_resource_names_all_its_subresources_and_a_subresource_only_itself() {
        let f = Faults::new(1, Arc::new(|| {}));
        f.inject(FaultRule::fail(409).resource("jobs.batch/status"));
        f.inject(FaultRule::fail(500).resource("pods"));
        let at = |resource: &str, group: &str, subresource: &str| RequestInfo {
            group: group.into(),
            subresource: subresource.into(),
            ..req(Verb::Update, resource, "x")
        };
        let code = |r: RequestInfo| f.judge(&r).fail.map(|e| e.code);
        assert_eq!(code(at("jobs", "batch", "status")), Some(409));
        assert_eq!(code(at("jobs", "batch", "")), None);
        assert_eq!(code(at("jobs", "batch", "scale")), None);
        assert_eq!(code(at("pods", "", "status")), Some(500));
        assert_eq!(code(at("pods", "", "")), Some(500));
    }

    #[test]
    fn user_agent_rules_match_only_that_client_and_lasting_rules_survive_clear() {
        let f = Faults::new(1, Arc::new(|| {}));
        f.inject(
            FaultRule::drop_connection(DropWhen::Answer)
                .user_agent("tollgate-component/")
                .lasting(),
        );
        f.inject(FaultRule::throttle(2));
        let from = |agent: &str| RequestInfo {
            user_agent: agent.into(),
            ..req(Verb::Get, "pods", "p")
        };
        let id = f.inject(FaultRule::delay(Duration::from_secs(1)).user_agent("kubectl/"));
        let component = f.judge(&from("tollgate-component/controller"));
        assert_eq!(component.drop, Some(DropWhen::Answer));
        let other = f.judge(&from("kubectl/v1.37.2"));
        assert_eq!(other.drop, None);
        assert_eq!(
            f.fired(id),
            1,
            "the delay applied to kubectl's request only"
        );
        let throttled = other.fail.expect("the throttle matches everyone");
        assert_eq!((throttled.code, throttled.reason), (429, "TooManyRequests"));
        assert_eq!(throttled.details.expect("details")["retryAfterSeconds"], 2);
        f.clear();
        assert!(f.judge(&from("kubectl/v1.37.2")).fail.is_none());
        assert_eq!(
            f.judge(&from("tollgate-component/autoscaler")).drop,
            Some(DropWhen::Answer)
        );
    }

    #[test]
    fn reseeding_changes_the_draw_and_repeats_it() {
        let draw = |seed| {
            let f = Faults::new(7, Arc::new(|| {}));
            f.reseed(seed);
            f.inject(FaultRule::fail(500).fraction(0.5));
            (0..64)
                .map(|_| f.judge(&req(Verb::Get, "pods", "p")).fail.is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }

    #[test]
    fn a_journal_keeps_each_judgement_in_order_until_taken() {
        let f = Faults::new(7, Arc::new(|| {}));
        f.inject(FaultRule::fail(500).name("b").lasting());
        f.judge(&req(Verb::Get, "pods", "before"));
        f.keep_journal();
        f.judge(&req(Verb::Get, "pods", "a"));
        f.judge(&req(Verb::Delete, "pods", "b"));
        let journal = f.take_journal();
        let names: Vec<_> = journal.iter().map(|j| j.request.name.as_str()).collect();
        assert_eq!(
            names,
            ["a", "b"],
            "judged before keep_journal or out of order"
        );
        assert!(journal[0].verdict.contains("fail: None"), "{journal:?}");
        assert!(journal[1].verdict.contains("code: 500"), "{journal:?}");
        f.judge(&req(Verb::Get, "pods", "after"));
        assert!(f.take_journal().is_empty(), "kept after take_journal");
    }

    #[tokio::test(start_paused = true)]
    async fn a_partition_ends_by_itself() {
        let f = Faults::new(1, Arc::new(|| {}));
        f.partition(Duration::from_secs(30));
        assert!(f.is_partitioned());
        tokio::time::sleep(Duration::from_secs(31)).await;
        assert!(!f.is_partitioned());
    }
}
