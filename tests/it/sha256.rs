//! SHA-256 repositories (issue 30): `git init --object-format=sha256`, where every
//! object id is 64 hex digits. Receipts, chains, notes, the receipt index, both
//! hooks, fetch and verify work there as in a SHA-1 repository, and stock git
//! (the oracle) reads what git-receipt writes: the objects a receipt names, the
//! notes, the refs. The server is `git daemon` on 127.0.0.1 serving a bare
//! SHA-256 repository with git-receipt's server hook.

use std::path::Path;

use crate::common::{Daemon, Env, change_src, clone};

fn rev(env: &Env, repo: &Path, name: &str) -> String {
    env.git_ok(repo, &["rev-parse", name]).trim().to_owned()
}

#[test]
fn a_sha256_repository_round_trips_receipts_through_a_hooked_server() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_sha256_repo.sh", "seed");
    assert_eq!(
        env.git_ok(&seed, &["rev-parse", "--show-object-format"])
            .trim(),
        "sha256"
    );
    let key = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    env.git_ok(
        &seed,
        &["config", "-f", ".gitreceipts", "signer.ci.key", key.trim()],
    );
    env.git_ok(&seed, &["commit", "-qam", "trust ci"]);
    let (bare, url) = daemon.bare_in(&env, "served.git", "sha256");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server", "--protect", "main"]);

    // a receipt names the 64-digit ids stock git gives the commit and its trees
    let dev = clone(&env, &url, "dev");
    env.receipt_ok(&dev, &["init"]);
    env.receipt_ok(&dev, &["run", "test"]);
    let head = rev(&env, &dev, "HEAD");
    assert_eq!(head.len(), 64, "{head}");
    let log = env.log_json(&dev);
    assert_eq!(log.len(), 1, "{log:?}");
    let receipt = &log[0];
    assert_eq!(receipt["commit"], head.as_str(), "{receipt}");
    let inputs = receipt["inputs"].as_str().unwrap();
    // the tree of the declared path alone: `src`, as HEAD has it
    assert_eq!(env.git_ok(&dev, &["cat-file", "-t", inputs]).trim(), "tree");
    assert_eq!(
        rev(&env, &dev, &format!("{inputs}:src")),
        rev(&env, &dev, "HEAD:src"),
        "{receipt}"
    );
    let chain_commit = receipt["chain_commit"].as_str().unwrap();
    assert_eq!(chain_commit.len(), 64);
    let writer = env.only_writer(&dev);
    assert_eq!(
        rev(&env, &dev, &format!("refs/receipts/{writer}")),
        chain_commit
    );
    let stored =
        serde_json::from_slice::<serde_json::Value>(&env.receipt_bytes(&dev, chain_commit))
            .unwrap();
    // docs/receipt.schema.json takes the 64-digit ids
    crate::common::receipt_schema::assert_schema_accepts(&stored);
    assert_eq!(
        stored["receipt"]["subject"]["tree"],
        rev(&env, &dev, "HEAD^{tree}").as_str()
    );

    // stock git shows the notes on the commit and on the inputs tree
    let id = receipt["id"].as_str().unwrap();
    for object in [head.as_str(), inputs] {
        let note = env.git_ok(
            &dev,
            &["notes", &format!("--ref=receipts/{writer}"), "show", object],
        );
        assert!(note.contains(id) && note.contains(chain_commit), "{note}");
    }

    // decisions: present, then stale after a change to the inputs
    assert_eq!(env.status_of(&dev, None, "test")["state"], "present");
    let r = env.receipt(&dev, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    let index = std::fs::read(dev.join(".git/receipt-index")).unwrap();
    assert_eq!(
        u32::from_le_bytes(index[24..28].try_into().unwrap()),
        32,
        "the index holds whole SHA-256 ids"
    );
    change_src(&env, &dev, "pub fn lib() { /* 2 */ }\n");
    assert_eq!(env.status_of(&dev, None, "test")["state"], "stale");

    // the pre-push hook refuses the commit without a fresh receipt ...
    let r = env.git(&dev, &["push", "-q", "origin", "main"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("git receipt run test"), "{r}");
    // ... and the server refuses it too when the hook is skipped
    let r = env.git(&dev, &["push", "-q", "--no-verify", "origin", "main"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("lacks present receipts")
            && r.stderr.contains("pre-receive hook declined"),
        "{r}"
    );
    assert_ne!(rev(&env, &bare, "main"), rev(&env, &dev, "HEAD"));
    // with a receipt, the hook pushes it first and the server takes both
    env.receipt_ok(&dev, &["run", "test"]);
    let r = env.git(&dev, &["push", "-q", "origin", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(rev(&env, &bare, "main"), rev(&env, &dev, "HEAD"));
    assert_eq!(
        rev(&env, &bare, &format!("refs/receipts/{writer}")),
        rev(&env, &dev, &format!("refs/receipts/{writer}"))
    );

    // a fresh clone fetches the chain, verifies it and passes the gate
    let reviewer = Env::new();
    let fresh = clone(&reviewer, &url, "fresh");
    let r = reviewer.receipt(&fresh, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    let r = reviewer.receipt(&fresh, &["verify", "--trust", "main"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("verified 2 receipts"), "{r}");
    let r = reviewer.receipt(&fresh, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");

    // a range run: one receipt per commit, in its temporary checkout
    change_src(&env, &dev, "pub fn lib() { /* 3 */ }\n");
    change_src(&env, &dev, "pub fn lib() { /* 4 */ }\n");
    let r = env.receipt(&dev, &["run", "test", "HEAD~2..HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("2 checks passed"), "{r}");
    let states = env.receipt(&dev, &["status", "HEAD~2..HEAD", "--json"]);
    assert_eq!(states.code, 0, "{states}");
    assert_eq!(states.stdout.matches("\"present\"").count(), 2, "{states}");
    let r = env.receipt(&dev, &["verify"]);
    assert_eq!(r.code, 0, "{r}");
}

/// A repository that also names every object in the other format
/// (`extensions.compatObjectFormat`) is refused before anything is written:
/// gix does not keep that map, so objects git-receipt wrote would lack their
/// second names.
#[test]
fn a_repository_keeping_sha1_names_beside_sha256_ones_is_refused_untouched() {
    let env = Env::new();
    let repo = env.fixture_repo("make_sha256_repo.sh", "repo");
    let refs_before = env.git_ok(&repo, &["for-each-ref"]);
    let config = repo.join(".git/config");
    let plain = std::fs::read_to_string(&config).unwrap();
    env.git_ok(&repo, &["config", "extensions.compatObjectFormat", "sha1"]);
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains("extensions.compatObjectFormat = sha1")
            && r.stderr
                .contains("hint: use git-receipt in a clone without"),
        "{r}"
    );
    // and a status, a read, says the same
    let r = env.receipt(&repo, &["status"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("compatObjectFormat"), "{r}");
    // nothing was written: git before 2.43 cannot open the repository with the
    // extension set, so it is taken out by hand before stock git looks
    std::fs::write(&config, plain).unwrap();
    assert_eq!(env.git_ok(&repo, &["for-each-ref"]), refs_before);
}
