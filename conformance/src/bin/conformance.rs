//! `conformance`: run the ProvisioningRequest class conformance suite against a cluster. The
//! suite's own check against the fake autoscaler's reference classes is `conformance-embedded`.

fn main() -> std::process::ExitCode {
    conformance::cli::main(None)
}
