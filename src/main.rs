//! `git-receipt`: parse, build the context, dispatch, map the outcome to an exit code.

// Every `print!`/`println!`/`eprint!`/`eprintln!` of this binary is one of these,
// defined before any module so that they shadow std's: std's panic when the
// write fails (a full disk under `2> file`), these never do (see
// `cli::output`).
macro_rules! print {
    ($($arg:tt)*) => { $crate::cli::output::out(format_args!($($arg)*)) };
}
macro_rules! println {
    () => { $crate::cli::output::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::output::out(format_args!("{}\n", format_args!($($arg)*))) };
}
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::cli::output::err(format_args!($($arg)*)) };
}
macro_rules! eprintln {
    () => { $crate::cli::output::err(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::output::err(format_args!("{}\n", format_args!($($arg)*))) };
}

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse_args();
    let outcome = cli::dispatch(args);
    let stdout_failed = cli::output::finish();
    match (outcome, stdout_failed) {
        (Err(e), _) => {
            cli::report_error(&e);
            ExitCode::from(2)
        }
        (Ok(_), Some(why)) => {
            cli::report_error(&anyhow::Error::new(cli::output::StdoutFailed(why)));
            ExitCode::from(2)
        }
        (Ok(code), None) => code,
    }
}
