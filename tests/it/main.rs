//! The integration tests: one test crate, so a change to the library links one
//! test executable instead of one per file. Each module below tells one story
//! against the real `git-receipt` binary, in the sealed environment of
//! [`common`]; run one with `cargo test --test it gitolite::`, one test with
//! `cargo test --test it gitolite::NAME -- --exact`.
//!
//! Every test of every module runs as a thread of this one process, so no test
//! may change what the process holds for all of them: no `std::env::set_var` or
//! `set_current_dir`, no umask, no signal handler; a child gets its environment
//! and working directory through its own `Command` ([`common::Env::seal`]).

mod common;

mod acceptance;
mod acceptance_scope;
mod artifacts;
mod bounded_reads;
mod checkpoint;
mod checkpoints;
mod ci_fresh_clone;
mod ci_notes;
mod cli_basics;
mod clock_order;
mod completions;
mod concurrent_gc;
mod dev_day;
mod durability;
mod ed25519_wycheproof;
mod entry_rules;
mod environment;
mod fail_closed;
mod faults;
mod fetch_checks;
mod first_hour;
mod freshness;
mod full_disk;
mod full_output;
mod fuzz_regressions;
mod gated_history;
mod gitolite;
mod hidden_worktree;
mod hostile;
mod hygiene;
mod idempotency;
mod index;
mod index_is_a_hint;
mod intoto_export;
mod jcs_conformance;
mod keys;
mod logs;
mod mcp;
mod no_identity;
mod notes_pack;
mod observers;
mod openssh_and_help;
mod parity;
mod pre_commit;
mod quarantine;
mod ranges;
mod readme_tour;
mod report;
mod results;
mod retention;
mod reviews;
mod run_edges;
mod run_range;
mod schema;
mod server_bypass;
mod server_ref_names;
mod sha256;
mod ssh_agent;
mod sshsig_interop;
mod tamper;
mod travel;

use std::collections::BTreeSet;
use std::path::Path;

/// Cargo builds no test crate of its own accord (`autotests = false` in
/// Cargo.toml), so a file under `tests/` that is not a module of this crate
/// would be neither compiled nor run, and nothing would say so.
#[test]
fn every_test_file_is_a_module_of_this_crate() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(tests.join("it/main.rs")).unwrap();
    let declared: BTreeSet<&str> = main
        .lines()
        .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut stray = Vec::new();
    for (dir, shown) in [(tests.clone(), "tests"), (tests.join("it"), "tests/it")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let module = if path.is_dir() {
                path.join("mod.rs").is_file().then_some(name.as_str())
            } else {
                name.strip_suffix(".rs")
            };
            let Some(module) = module else { continue };
            let in_crate = shown == "tests/it" && (module == "main" || declared.contains(module));
            if !in_crate {
                stray.push(format!("{shown}/{name}"));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "not part of the `it` test crate, so never run: {stray:?} \
         (move each to tests/it/ and declare it with `mod` in tests/it/main.rs)"
    );
}
