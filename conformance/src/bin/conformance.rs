//! `conformance`: run the ProvisioningRequest class conformance suite against a cluster: the one
//! --kubeconfig, --context or --options names, else the current context of the kubeconfig kubectl
//! would use. The suite's own check against the fake autoscaler's reference classes is
//! `conformance-embedded` (`cargo xtask conformance`).

fn main() -> std::process::ExitCode {
    conformance::cli::main(None)
}
