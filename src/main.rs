//! `git-receipt`: parse, build the context, dispatch, map the outcome to an exit code.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse_args();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(e) => {
            cli::report_error(&e);
            ExitCode::from(2)
        }
    }
}
