//! `conformance-embedded`: the `conformance` command line with Tollgate's embedded world built in.
//! Without --kubeconfig, --context or --options it runs the suite against the fake autoscaler's
//! reference classes on virtual time (`cargo xtask conformance`).

fn main() -> std::process::ExitCode {
    conformance::cli::main(Some(&conformance_embedded::Reference))
}
