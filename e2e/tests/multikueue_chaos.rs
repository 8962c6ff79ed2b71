//! MultiKueue under chaos (see `e2e::chaos`): seeded random partitions, heals, slow links,
//! restarts and evictions on a manager with three workers, the invariant checked after every
//! step, and every job finished once at the end. `.ci/run` runs 200 seeds here;
//! `cargo xtask chaos --multikueue` runs more, with an optimised build, through `many_seeds`.

// mimalloc: these runs allocate and free many small maps; with glibc's allocator about a third of
// their time went to malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use e2e::chaos::{Action, Outcome, Plan, draw, run_seed, run_seeds};

/// The seeds `.ci/run` covers.
const SEEDS: u64 = 200;

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn report(outcomes: &[Outcome]) -> String {
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| o.failure.is_some())
        .map(|o| o.to_string())
        .collect();
    format!(
        "{} of {} seeds failed\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    )
}

#[test]
fn every_seed_keeps_the_invariant_and_finishes_every_job_once() {
    let seeds: Vec<u64> = (0..SEEDS).collect();
    let outcomes = run_seeds(&seeds, &Plan::default(), threads());
    assert_eq!(outcomes.len(), seeds.len());
    let failed: Vec<Outcome> = outcomes
        .iter()
        .filter(|o| o.failure.is_some())
        .cloned()
        .collect();
    assert!(failed.is_empty(), "{}", report(&failed));
}

#[test]
fn a_seed_replays_the_same_steps_and_the_same_trace() {
    let plan = Plan::default();
    let first = run_seed(7, &plan);
    let again = run_seed(7, &plan);
    assert_eq!(first.failure, None, "{first}");
    // A step per drawn action, the final heal, and a trace line for each plus the end.
    assert_eq!(first.steps.len(), draw(7, &plan).len() + 1);
    assert_eq!(first.trace.len(), first.steps.len());
    assert_eq!(first, again);
}

#[test]
fn seeds_draw_different_storms_that_submit_every_job() {
    let plan = Plan::default();
    let storms: Vec<Vec<Action>> = (0..20)
        .map(|seed| draw(seed, &plan).into_iter().map(|(a, _)| a).collect())
        .collect();
    for storm in &storms {
        let submitted = storm
            .iter()
            .filter(|a| matches!(a, Action::Submit(_)))
            .count();
        assert_eq!(submitted, plan.jobs, "{storm:?}");
    }
    let distinct: std::collections::BTreeSet<String> =
        storms.iter().map(|s| format!("{s:?}")).collect();
    assert_eq!(distinct.len(), storms.len(), "twenty seeds, twenty storms");
    // Over twenty seeds every kind of fault comes up.
    let kinds: std::collections::HashSet<std::mem::Discriminant<Action>> = storms
        .iter()
        .flatten()
        .map(std::mem::discriminant)
        .collect();
    assert_eq!(kinds.len(), 8);
}

/// `cargo xtask chaos --multikueue` runs this (ignored otherwise): `TOLLGATE_CHAOS_SEEDS=N` seeds
/// from `TOLLGATE_CHAOS_FIRST` (default 0), or the one seed `TOLLGATE_CHAOS_SEED`, printing every
/// failing seed with its steps.
#[test]
#[ignore = "run by `cargo xtask chaos --multikueue`"]
fn many_seeds() {
    // A replay with `RUST_LOG=controller::admissionchecks::multikueue=debug` shows each plan the
    // manager made and what each job sync did.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.parse::<u64>().expect("a number"))
    };
    let seeds: Vec<u64> = match var("TOLLGATE_CHAOS_SEED") {
        Some(seed) => vec![seed],
        None => {
            let first = var("TOLLGATE_CHAOS_FIRST").unwrap_or(0);
            let n = var("TOLLGATE_CHAOS_SEEDS").unwrap_or(2000);
            (first..first + n).collect()
        }
    };
    let started = std::time::Instant::now();
    let outcomes = run_seeds(&seeds, &Plan::default(), threads());
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.failure.is_some()).collect();
    if seeds.len() == 1 {
        println!("{}", outcomes[0]);
    }
    for o in &failed {
        println!("{o}\n");
    }
    println!(
        "MultiKueue chaos: {} seeds ({}..={}), {} failed, {:.1} s",
        outcomes.len(),
        seeds.first().copied().unwrap_or_default(),
        seeds.last().copied().unwrap_or_default(),
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        let list: Vec<String> = failed.iter().map(|o| o.seed.to_string()).collect();
        panic!("failing seeds: {}", list.join(" "));
    }
}

#[test]
fn a_failure_names_the_seed_its_steps_and_how_to_replay_it() {
    let outcome = Outcome {
        seed: 42,
        steps: vec![
            "   30s submit job-1".into(),
            "   45s partition worker-2 (hanging)".into(),
        ],
        trace: vec![],
        failure: Some("after step 2: job-1 runs on worker-1 and worker-2 at once".into()),
    };
    assert_eq!(
        outcome.to_string(),
        "seed 42 FAILED: after step 2: job-1 runs on worker-1 and worker-2 at once\n\
         \x20  1.    30s submit job-1\n\
         \x20  2.    45s partition worker-2 (hanging)\n\
         \x20 replay: cargo xtask chaos --multikueue --seed 42"
    );
}
