//! TestEnv: virtual time, and components that can be stopped, started and restarted.

use std::sync::Arc;
use std::time::Duration;

use e2e::scenario::{Registry, run_blocking};
use e2e::{Component, ComponentContext, TestEnv};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};

/// Every 10 s of virtual time, writes how many ticks it has counted since it started into the
/// ConfigMap `ticker`. Its count lives in memory, so a restart starts again from one.
struct Ticker;

impl Component for Ticker {
    fn name(&self) -> &str {
        "ticker"
    }

    fn run(&self, ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>> {
        let client = ctx.client;
        Box::pin(async move {
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            for count in 1.. {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "ticker"}, "data": {"count": count.to_string()}});
                api.patch(
                    "ticker",
                    &PatchParams::apply("ticker").force(),
                    &Patch::Apply(&cm),
                )
                .await
                .map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }
}

/// Fails on its first write.
struct Broken;

impl Component for Broken {
    fn name(&self) -> &str {
        "broken"
    }

    fn run(&self, _ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Err("lost its lease".to_string()) })
    }
}

async fn count(env: &TestEnv) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.get_opt("ticker")
        .await
        .expect("reading the ticker ConfigMap")
        .and_then(|cm| cm.data?.get("count").cloned())
}

#[tokio::test(start_paused = true)]
async fn components_run_on_virtual_time_and_can_be_stopped_started_and_restarted() {
    let env = TestEnv::builder()
        .component(Arc::new(Ticker))
        .build()
        .unwrap();
    let wall = std::time::Instant::now();
    env.advance(Duration::from_secs(35)).await;
    assert_eq!(count(&env).await.as_deref(), Some("3"));
    assert_eq!(env.elapsed(), Duration::from_secs(35));

    env.stop("ticker").await.unwrap();
    assert!(!env.is_running("ticker"));
    env.advance(Duration::from_secs(60)).await;
    assert_eq!(
        count(&env).await.as_deref(),
        Some("3"),
        "a stopped component does nothing"
    );

    env.start("ticker").unwrap();
    env.advance(Duration::from_secs(15)).await;
    assert_eq!(
        count(&env).await.as_deref(),
        Some("1"),
        "its memory was lost"
    );

    env.advance(Duration::from_secs(20)).await;
    env.restart("ticker").await.unwrap();
    env.advance(Duration::from_secs(10)).await;
    assert_eq!(count(&env).await.as_deref(), Some("1"));
    assert!(
        wall.elapsed() < Duration::from_secs(5),
        "two minutes of virtual time must not be waited for"
    );
}

#[tokio::test(start_paused = true)]
async fn component_errors_name_the_component() {
    let env = TestEnv::builder()
        .component(Arc::new(Ticker))
        .build()
        .unwrap();
    assert!(
        env.start("ticker")
            .unwrap_err()
            .to_string()
            .contains("already running")
    );
    let unknown = env.stop("controller").await.unwrap_err().to_string();
    assert_eq!(unknown, "no component named `controller` (running: ticker)");
    let dup = TestEnv::builder()
        .component(Arc::new(Ticker))
        .component(Arc::new(Ticker))
        .build();
    assert!(matches!(dup, Err(e2e::EnvError::DuplicateComponent(n)) if n == "ticker"));

    let env = TestEnv::builder()
        .component(Arc::new(Broken))
        .build()
        .unwrap();
    env.advance(Duration::from_millis(1)).await;
    let err = env.check_components().unwrap_err().to_string();
    assert_eq!(err, "component `broken` failed: lost its lease");
}

#[tokio::test(start_paused = true)]
async fn the_project_crds_are_installed() {
    let env = TestEnv::builder().build().unwrap();
    let discovery = kube::Discovery::new(env.client())
        .run_aggregated()
        .await
        .unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    assert!(groups.contains(&"kueue.x-k8s.io".to_string()), "{groups:?}");
    assert!(
        groups.contains(&"autoscaling.x-k8s.io".to_string()),
        "{groups:?}"
    );
}

fn registry() -> Registry {
    let mut registry = Registry::standard();
    registry.register("ticker", |_| Ok(Arc::new(Ticker) as Arc<dyn Component>));
    registry.register("broken", |_| Ok(Arc::new(Broken) as Arc<dyn Component>));
    registry
}

#[test]
fn scenarios_restart_components_and_the_trace_shows_what_they_did() {
    let scenario = crate::scenario(
        "name: restart\ndescription: x\ncomponents: {ticker: {}}\ntrace: [v1/ConfigMap]\nsteps:\n  - advance: 25s\n  - restart: ticker\n  - advance: 10s\n  - assert:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: ticker}, data: {count: \"1\"}}\n",
    );
    let outcome = run_blocking(&scenario, &registry()).unwrap();
    assert!(outcome.failure.is_none(), "{}", outcome.failure.unwrap());
    let trace = outcome.trace.to_yaml();
    assert!(
        trace.contains("at: 10s\n  added: ConfigMap default/ticker"),
        "{trace}"
    );
    assert!(
        trace.contains("at: 20s\n  modified: ConfigMap default/ticker"),
        "{trace}"
    );
    assert!(trace.contains("step: 2 restart ticker"), "{trace}");
    assert!(
        trace
            .contains("at: 35s\n  modified: ConfigMap default/ticker\n  changes:\n    data.count:"),
        "{trace}"
    );
}

#[test]
fn a_component_that_fails_fails_the_step_it_failed_in() {
    let scenario = crate::scenario(
        "name: broken\ndescription: x\ncomponents: {broken: {}}\nsteps:\n  - advance: 1s\n",
    );
    let outcome = run_blocking(&scenario, &registry()).unwrap();
    let report = outcome.failure.unwrap().to_string();
    assert!(
        report.contains("component `broken` failed: lost its lease"),
        "{report}"
    );
}

#[test]
fn unknown_components_are_refused_before_anything_runs() {
    let scenario = crate::scenario(
        "name: x\ndescription: x\ncomponents: {autoscaler: {}}\nsteps:\n  - advance: 1s\n",
    );
    let err = run_blocking(&scenario, &Registry::standard()).unwrap_err();
    assert_eq!(
        err,
        "inline.yaml: components.autoscaler: unknown component `autoscaler` (known: controller, fake-autoscaler, job-runner)"
    );
}

#[test]
fn a_bad_controller_configuration_is_refused_with_its_field() {
    let scenario = crate::scenario(
        "name: x\ndescription: x\ncomponents: {controller: {configuration: {resources: {transformations: [{input: cpu, strategy: Keep}]}}}}\nsteps:\n  - advance: 1s\n",
    );
    let err = run_blocking(&scenario, &Registry::standard()).unwrap_err();
    assert!(
        err.starts_with("inline.yaml: components.controller: configuration: "),
        "{err}"
    );
    assert!(
        err.contains("resources.transformations[0].strategy: unknown variant `Keep`"),
        "{err}"
    );
}
