//! `conformance-embedded`: the `conformance` command line with Tollgate's embedded world built in.
//! Without --kubeconfig, --context or --options it runs the suite against the fake autoscaler's
//! reference classes on virtual time (`cargo xtask conformance`); `--class` then picks one of them
//! and refuses any other name, which only a cluster can test.

fn main() -> std::process::ExitCode {
    conformance::cli::main(Some(&conformance_embedded::Reference))
}
