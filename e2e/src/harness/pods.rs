//! A Job's pods, for the job runner's `pods: true` mode: the scheduler and the kubelet in one.
//! A pod is created only once a node can take it (already bound, `spec.nodeName` set), using the
//! fake autoscaler's scheduling simulation, so that pods land on the capacity a
//! ProvisioningRequest brought and consume its booking. A Job starts running once all its pods
//! exist; when it ends they are Succeeded or Failed; when it is suspended they are deleted.

use fake_autoscaler::capacity::{PodShape, Sim, SimNode};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use support::mirror::Mirror;

/// The nodes and pods the job runner sees.
#[derive(Default)]
pub struct Cluster {
    pub nodes: Mirror<Node>,
    pub pods: Mirror<Pod>,
}

impl Cluster {
    /// The pods a Job owns, by name.
    fn pods_of<'a>(&'a self, job: &'a Job) -> impl Iterator<Item = &'a Pod> + 'a {
        let uid = job.uid().unwrap_or_default();
        self.pods.values().filter(move |p| {
            p.owner_references()
                .iter()
                .any(|o| o.uid == uid && o.controller == Some(true))
        })
    }

    /// The simulation: every Ready node, minus the pods bound to it that still run.
    fn simulation(&self) -> Sim {
        let mut sim = Sim::new(self.nodes.values().map(SimNode::from_node).collect());
        for pod in self.pods.values().filter(|p| running(p)) {
            if let (Some(node), Some(spec)) = (
                pod.spec.as_ref().and_then(|s| s.node_name.as_deref()),
                pod.spec.as_ref(),
            ) && let Ok(shape) = PodShape::from_spec(spec)
            {
                sim.occupy(node, &shape);
            }
        }
        sim
    }
}

fn running(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed"))
}

/// Creates the Job's missing pods that fit somewhere. Returns whether all of them now exist.
pub async fn start(client: &Client, job: &Job, cluster: &mut Cluster) -> Result<bool, String> {
    let namespace = job.namespace().unwrap_or_default();
    let wanted = job.spec.as_ref().and_then(|s| s.parallelism).unwrap_or(1);
    let existing: Vec<Pod> = cluster.pods_of(job).cloned().collect();
    let template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let spec = template.spec.clone().unwrap_or_default();
    let shape = PodShape::from_spec(&spec).map_err(|e| format!("Job {}: {e}", job.name_any()))?;
    let mut sim = cluster.simulation();
    let mut all = true;
    for index in 0..wanted {
        let name = format!("{}-{index}", job.name_any());
        if let Some(pod) = existing.iter().find(|p| p.name_any() == name) {
            // Created by an earlier try whose report of it failed.
            if pending(pod) {
                let running = mark(client, pod.clone(), "Running").await?;
                cluster.pods.apply(running);
            }
            continue;
        }
        let Some(node) = sim.place(&shape, false).map(str::to_string) else {
            all = false;
            continue;
        };
        let mut labels = template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        labels.insert("batch.kubernetes.io/job-name".into(), job.name_any());
        labels.insert("job-name".into(), job.name_any());
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                labels: Some(labels),
                annotations: template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.annotations.clone()),
                // As the Job controller sets it: the controller, blocking the Job's deletion.
                owner_references: job.controller_owner_ref(&()).map(|mut o| {
                    o.block_owner_deletion = Some(true);
                    vec![o]
                }),
                ..ObjectMeta::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                node_name: Some(node),
                ..spec.clone()
            }),
            status: None,
        };
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let created = match api.create(&PostParams::default(), &pod).await {
            Ok(created) => created,
            // An earlier try created it (its answer was lost): the watch brings it, and with it
            // this Job back.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                all = false;
                continue;
            }
            Err(e) => return Err(format!("creating pod {namespace}/{name}: {e}")),
        };
        let created = mark(client, created, "Running").await?;
        cluster.pods.apply(created);
    }
    Ok(all)
}

/// Not yet reported running, nor ended.
fn pending(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_none_or(|phase| phase == "Pending")
}

/// The kubelet's report: the pod's phase.
async fn mark(client: &Client, mut pod: Pod, phase: &str) -> Result<Pod, String> {
    let namespace = pod.namespace().unwrap_or_default();
    pod.status = Some(PodStatus {
        phase: Some(phase.into()),
        ..pod.status.unwrap_or_default()
    });
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    api.replace_status(&pod.name_any(), &PostParams::default(), &pod)
        .await
        .map_err(|e| format!("updating pod {namespace}/{}: {e}", pod.name_any()))
}

/// The Job ended: its running pods end with it (`Succeeded` or `Failed`).
pub async fn finish(
    client: &Client,
    job: &Job,
    phase: &str,
    cluster: &mut Cluster,
) -> Result<(), String> {
    let pods: Vec<Pod> = cluster
        .pods_of(job)
        .filter(|p| running(p))
        .cloned()
        .collect();
    for pod in pods {
        let updated = mark(client, pod, phase).await?;
        cluster.pods.apply(updated);
    }
    Ok(())
}

/// The Job was suspended: its pods are deleted.
pub async fn stop(client: &Client, job: &Job, cluster: &mut Cluster) -> Result<(), String> {
    let pods: Vec<Pod> = cluster.pods_of(job).cloned().collect();
    for pod in pods {
        let (namespace, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(format!("deleting pod {namespace}/{name}: {e}")),
        }
        cluster.pods.delete(&pod);
    }
    Ok(())
}
