//! Tollgate's automation: `cargo xtask <command>`. Every job a developer or CI runs by hand lives here.

mod codegen;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "xtask",
    about = "Tollgate automation (run as `cargo xtask <command>`)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate checked-in code derived from dependencies (the built-in resource catalogue).
    Codegen {
        /// Only check that the checked-in files are up to date; exit non-zero if not.
        #[arg(long)]
        check: bool,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Codegen { check } => codegen::run(check),
    }
}
