//! The suite against Tollgate's own world: a fake API server on virtual time with the fake
//! autoscaler serving its reference classes (or a broken variant of them). This is how the suite
//! checks itself: the reference classes must pass, and every broken variant must be caught.
//!
//! It is a package of its own, apart from `conformance`: virtual time is a paused tokio runtime,
//! which needs tokio's `test-util`, and the world is the scenario engine's `TestEnv`; the
//! `conformance` binary vendors run links neither. Its binary, `conformance-embedded`, is the
//! same command line with this world built in (`cargo xtask conformance` runs it).

use std::sync::Arc;
use std::time::Duration;

use api::config::GoDuration;
use conformance::cli::EmbeddedWorld;
use conformance::options::Options;
use conformance::reference::ReferenceClass;
use conformance::runner::{self, Outcome, Selection, TestResult};
use e2e::env::TestEnv;
use e2e::harness::{AutoscalerComponent, JobRunner};
use fake_autoscaler::Broken;

/// The fake autoscaler's world: one 4-CPU node (always there), and a tainted GPU group of at most
/// two 4-GPU nodes that only a scaling class uses, and only for pods that tolerate the taint.
pub const AUTOSCALER_CONFIG: &str = r#"
nodeGroups:
  - {name: cpu, machine: {cpu: "4", memory: 16Gi}, minSize: 1, maxSize: 1}
  - name: gpu
    machine: {cpu: "16", nvidia.com/gpu: "4"}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    maxSize: 2
    scaleUpDelay: 1m
classes:
  - {name: check-capacity.autoscaling.x-k8s.io, behaviour: check-capacity}
  - {name: best-effort-atomic-scale-up.autoscaling.x-k8s.io, behaviour: atomic-scale-up}
  - name: queued-provisioning.tollgate.dev
    behaviour: vendor
    queueDelay: 30s
    provisioningClassDetails: {NodePoolName: "{nodeGroup}", ResizeRequestName: "{request}-resize"}
# Upstream collects old requests after 7 days. Seven virtual days cost seconds of watch restarts,
# so the embedded world collects after one hour (the options' timeout says so too).
timing: {garbageCollection: 1h}
"#;

/// Runs the suite on a fresh embedded world. Call it inside a paused runtime: every wait is on
/// virtual time.
pub async fn run(
    options: &Options,
    broken: Option<Broken>,
    selection: &Selection,
    progress: impl FnMut(&TestResult),
) -> Result<Vec<TestResult>, String> {
    run_on(options, broken, selection, None, progress).await
}

/// An unreliable API server: a fraction of requests fail with 500, and every watch is closed
/// at random moments (on average every `watch_close_every`), drawn from `seed`.
#[derive(Debug, Clone, Copy)]
pub struct Flaky {
    pub seed: u64,
    pub failing: f64,
    pub watch_close_every: Duration,
}

/// [`run`] on an API server that misbehaves as `flaky` says, from the first test to the last.
pub async fn run_flaky(
    options: &Options,
    flaky: Flaky,
    selection: &Selection,
    progress: impl FnMut(&TestResult),
) -> Result<Vec<TestResult>, String> {
    run_on(options, None, selection, Some(flaky), progress).await
}

async fn run_on(
    options: &Options,
    broken: Option<Broken>,
    selection: &Selection,
    flaky: Option<Flaky>,
    progress: impl FnMut(&TestResult),
) -> Result<Vec<TestResult>, String> {
    let mut config =
        fake_autoscaler::Config::parse(AUTOSCALER_CONFIG).map_err(|e| e.to_string())?;
    config.broken = broken;
    // The job runner plays the Job controller, scheduler and kubelet for the kueue profile.
    let env = TestEnv::builder()
        .component(Arc::new(AutoscalerComponent::new(config)))
        .component(Arc::new(
            JobRunner::new(Duration::from_secs(600)).with_pods(),
        ))
        .build()
        .map_err(|e| e.to_string())?;
    // The autoscaler makes its node before the first test.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let clock = controller::Clock::anchored(
        env.start_time(),
        tokio::time::Instant::now() - env.elapsed(),
    );
    let Some(flaky) = flaky else {
        return Ok(runner::run(&env.client(), options, selection, clock, progress).await);
    };
    let faults = env.faults().clone();
    faults.inject(fake_apiserver::FaultRule::fail(500).fraction(flaky.failing));
    let closer = tokio::spawn(close_watches_at_random(faults.clone(), flaky));
    let results = runner::run(&env.client(), options, selection, clock, progress).await;
    closer.abort();
    faults.clear();
    Ok(results)
}

/// Closes every watch at random moments, on average every `watch_close_every`.
async fn close_watches_at_random(faults: fake_apiserver::Faults, flaky: Flaky) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(flaky.seed);
    let mean = flaky.watch_close_every.as_millis().max(2) as u64;
    loop {
        let wait = rng.random_range(1..2 * mean);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        faults.close_watches();
    }
}

/// A paused current-thread runtime, as scenarios use, for [`run`].
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
}

/// A reference class's options, with the timeouts under which an earlier suite let the variant
/// pass ([`Broken::blinding_timeouts`]): the suite must catch it even so.
pub fn blinded_options(class: ReferenceClass, variant: Broken) -> Result<Options, String> {
    let mut options = class.options();
    for (name, value) in variant.blinding_timeouts() {
        let value = GoDuration::parse(value).map_err(|e| format!("timeout {name}: {e}"))?;
        options.timeouts.set(name, value)?;
    }
    Ok(options)
}

/// Which test caught a broken variant: the first core test whose failure names the rule the
/// variant breaks, else the first extended one, trying each reference class in turn, each with
/// the variant's [`blinded_options`].
pub async fn catch(variant: Broken) -> Result<Option<(ReferenceClass, TestResult)>, String> {
    for class in ReferenceClass::ALL {
        let results = run(
            &blinded_options(class, variant)?,
            Some(variant),
            &Selection::default(),
            |_| {},
        )
        .await?;
        let mut catching: Vec<TestResult> = results
            .into_iter()
            .filter(|r| matches!(&r.outcome, Outcome::Failed(f) if f.rule == Some(variant.rule())))
            .collect();
        catching.sort_by_key(|r| r.profile);
        if let Some(first) = catching.into_iter().next() {
            return Ok(Some((class, first)));
        }
    }
    Ok(None)
}

/// The embedded world for the command line.
pub struct Reference;

impl EmbeddedWorld for Reference {
    fn run(
        &self,
        options: &Options,
        broken: Option<&str>,
        selection: &Selection,
        progress: &mut dyn FnMut(&TestResult),
    ) -> anyhow::Result<Vec<TestResult>> {
        let broken = broken
            .map(Broken::from_name)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        runtime()?
            .block_on(run(options, broken, selection, progress))
            .map_err(anyhow::Error::msg)
    }

    /// Every broken variant must fail at least one test whose message names the rule it breaks.
    fn mutants(&self) -> anyhow::Result<bool> {
        let mut all_caught = true;
        for variant in Broken::ALL {
            let caught = runtime()?
                .block_on(catch(variant))
                .map_err(anyhow::Error::msg)?;
            match caught {
                Some((class, test)) => println!(
                    "caught  {:<36} by {} on {} ({}){}: {}",
                    variant.name(),
                    test.name,
                    class.class_name(),
                    test.profile.name(),
                    with_timeouts(variant),
                    variant.rule()
                ),
                None => {
                    all_caught = false;
                    println!(
                        "MISSED  {:<36} no test{} named: {}",
                        variant.name(),
                        with_timeouts(variant),
                        variant.rule()
                    );
                }
            }
        }
        Ok(all_caught)
    }
}

/// ` with retry=15m`: the timeouts a variant is played with, for the mutants line.
fn with_timeouts(variant: Broken) -> String {
    let timeouts: Vec<String> = variant
        .blinding_timeouts()
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    if timeouts.is_empty() {
        String::new()
    } else {
        format!(" with {}", timeouts.join(", "))
    }
}
