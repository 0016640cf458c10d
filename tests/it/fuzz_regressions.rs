//! Every input the fuzzers (`fuzz/`, `cargo +nightly fuzz run <target>`) ever
//! crashed on, replayed on stable through the same checks the targets make
//! (`fuzz/checks.rs`), together with the seed corpora. A file under
//! `fuzz/regressions/<target>/` is named after the bug it pins.

#[path = "../../fuzz/checks.rs"]
mod checks;

use std::path::Path;

/// Run `check` on every file under `fuzz/<dir>/<target>/`; return how many.
fn replay(dir: &str, target: &str, check: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(dir)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&root) else {
        return 0;
    };
    let mut n = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} fails its check", path.display());
        n += 1;
    }
    n
}

#[test]
fn every_seed_and_every_crash_input_passes_its_target_check() {
    type Check = fn(&[u8]);
    let targets: [(&str, Check); 8] = [
        ("receipt", checks::receipt),
        ("note", checks::note),
        ("contract", checks::contract),
        ("allowed_signers", checks::allowed_signers),
        ("hook_input", checks::hook_input),
        ("public_key", checks::public_key),
        ("signatures", checks::signatures),
        ("checkpoint", checks::checkpoint),
    ];
    for (target, check) in targets {
        let seeds = replay("seeds", target, check);
        assert!(seeds > 0, "fuzz/seeds/{target} holds a seed corpus");
        replay("regressions", target, check);
    }
}

/// The seeds must exercise the success paths the checks assert on, or the
/// checks would only ever see refusals.
#[test]
fn the_seeds_parse() {
    let seed = |t: &str, f: &str| {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fuzz/seeds")
                .join(t)
                .join(f),
        )
        .unwrap()
    };
    let receipt = seed("receipt", "worked_example.json");
    assert!(git_receipt::receipt::Receipt::parse(&receipt).is_ok());
    let contract = seed("contract", "full");
    let c = git_receipt::contract::Contract::parse(&contract, Path::new(".gitreceipts")).unwrap();
    assert_eq!(c.checks.len(), 2);
    let key = String::from_utf8(seed("public_key", "ed25519")).unwrap();
    assert!(git_receipt::sign::PublicKey::from_openssh(&key).is_ok());
    let hook = String::from_utf8(seed("hook_input", "pre_push")).unwrap();
    assert_eq!(git_receipt::hooks::parse_pre_push(&hook).unwrap().len(), 3);
    let note = seed("note", "two_lines");
    let object = gix::ObjectId::null(gix::hash::Kind::Sha1);
    let lines = git_receipt::store::notes::parse_note("n", object, &note).unwrap();
    assert_eq!(lines.len(), 2);
    // a checkpoint a real `git receipt checkpoint` signed, its payload, and stubs
    let envelope = seed("checkpoint", "envelope.json");
    let payload: git_receipt::checkpoint::Payload =
        git_receipt::canon::from_canonical(&seed("checkpoint", "payload.json")).unwrap();
    let raw = git_receipt::store::checkpoints::RawCheckpoint {
        commit: object,
        parents: Vec::new(),
        file: Ok(envelope),
    };
    let checked = git_receipt::checkpoint::check_entry(
        &raw,
        &payload.signer,
        git_receipt::checkpoint::Below::Root,
        40,
    )
    .unwrap();
    assert_eq!(checked.payload, payload);
    for stub in ["stub.json", "stub-root-sha256.json"] {
        assert!(git_receipt::store::stub::Stub::parse(&seed("checkpoint", stub)).is_ok());
    }
}
