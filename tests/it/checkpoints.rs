//! Signed checkpoints (issue 30): a trusted signer's checkpoint of every chain's
//! tip travels through a hooked `git daemon` on 127.0.0.1, and a fresh clone
//! verifies only what came after it. Forged (an untrusted signer, a tampered
//! payload), stale (older than `receipt.checkpointMaxAge`) and rolled back (a
//! server that holds back checkpoints, or a chain that went back below a
//! recorded tip) are each refused, by the server where it can tell, and by the
//! reader. Stock git is the oracle for what the server holds.

use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::common::{
    Daemon, Env, HttpServer, change_src, clone, clone_with, days_ago, days_from_now,
};

/// What the hints say takes the rest of chains `fetch --since` cut: `git fetch
/// --unshallow origin 'refs/receipts/*:refs/receipts/*'`.
fn take_the_rest_of_the_chains(env: &Env, dir: &Path) {
    env.git_ok(
        dir,
        &[
            "fetch",
            "-q",
            "--unshallow",
            "origin",
            "refs/receipts/*:refs/receipts/*",
        ],
    );
}

fn rev(env: &Env, repo: &Path, name: &str) -> String {
    env.git_ok(repo, &["rev-parse", name]).trim().to_owned()
}

fn verify_json(env: &Env, dir: &Path, envs: &[(&str, &str)]) -> (i32, serde_json::Value, String) {
    let r = env.receipt_with(dir, &["verify", "--since-checkpoint", "--json"], envs);
    let v = serde_json::from_str(&r.stdout).unwrap_or(serde_json::Value::Null);
    (r.code, v, r.stderr)
}

/// A served repository whose `.gitreceipts` trusts `env`'s key as `ci`, with the
/// server hook protecting main, and a clone of it where `env` wrote two
/// receipts and pushed them.
struct Served {
    _server: Box<dyn std::any::Any>,
    bare: PathBuf,
    url: String,
    dev: PathBuf,
    writer: String,
}

fn served(env: &Env) -> Served {
    served_on(env, false)
}

/// [`served`], over git's smart HTTP (`git http-backend`) when `http`, else
/// `git daemon`.
fn served_on(env: &Env, http: bool) -> Served {
    let (server, (bare, url)): (Box<dyn std::any::Any>, (PathBuf, String)) = if http {
        let h = HttpServer::start(env);
        let served = h.bare(env, "served.git");
        (Box::new(h), served)
    } else {
        let d = Daemon::start(env);
        let served = d.bare(env, "served.git");
        (Box::new(d), served)
    };
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let key = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    env.git_ok(
        &seed,
        &["config", "-f", ".gitreceipts", "signer.ci.key", key.trim()],
    );
    env.git_ok(&seed, &["commit", "-qam", "trust ci"]);
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server", "--protect", "main"]);
    let dev = clone(env, &url, "dev");
    // dated well before a checkpoint signed now, as a real chain's older
    // entries are: `fetch --since` cuts the chains that moved by date, a week
    // before the checkpoint
    let then = days_ago(40);
    for check in ["test", "docs"] {
        let r = env.receipt_with(&dev, &["run", check], &[("GIT_RECEIPT_TEST_NOW", &then)]);
        assert_eq!(r.code, 0, "{r}");
    }
    env.receipt_ok(&dev, &["push"]);
    let writer = env.only_writer(&dev);
    Served {
        _server: server,
        bare,
        url,
        dev,
        writer,
    }
}

#[test]
fn a_fresh_clone_verifies_only_what_came_after_a_trusted_checkpoint_and_refuses_a_stale_one() {
    let env = Env::new();
    let s = served(&env);
    let r = env.receipt(&s.dev, &["checkpoint", "--push"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("checkpoint #0"), "{r}");
    assert!(!r.stderr.contains("not a [signer]"), "ci is a signer: {r}");
    let cref = format!("refs/receipt-checkpoints/{}", s.writer);
    // stock git: the server holds it, one file in one commit
    assert_eq!(rev(&env, &s.bare, &cref), rev(&env, &s.dev, &cref));
    assert_eq!(
        env.git_ok(&s.bare, &["ls-tree", "--name-only", &cref])
            .trim(),
        "checkpoint.json"
    );
    // a receipt after it
    change_src(&env, &s.dev, "after the checkpoint\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);

    // a reviewer (another key, trusting .gitreceipts on main) starts from it
    let reviewer = Env::new();
    let dir = clone(&reviewer, &s.url, "reviewer");
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("1 new checkpoint"), "{r}");
    let (code, v, err) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["receipts"], 1, "only the receipt after it: {v}");
    assert_eq!(v["covered_by_checkpoint"], 2, "{v}");
    assert_eq!(v["signed_checkpoint"]["sequence"], 0, "{v}");
    assert_eq!(v["signed_checkpoint"]["signer"], s.writer.as_str());
    // the whole verify agrees on the total
    let whole = reviewer.receipt(&dir, &["verify", "--json"]);
    let whole: serde_json::Value = serde_json::from_str(&whole.stdout).unwrap();
    assert_eq!(whole["receipts"], 3, "{whole}");

    // stale: 60 days on, the newest checkpoint is past the 45-day default
    let later = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 60 * 86_400)
        .to_string();
    let clock = [("GIT_RECEIPT_TEST_NOW", later.as_str())];
    let r = reviewer.receipt_with(&dir, &["verify", "--since-checkpoint"], &clock);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("STALE"), "{r}");
    assert!(r.stderr.contains("receipt.checkpointMaxAge"), "{r}");
    assert!(r.stderr.contains("git receipt checkpoint --push"), "{r}");
    // a reader who allows 90 days takes it
    reviewer.git_ok(&dir, &["config", "receipt.checkpointMaxAge", "90d"]);
    let (code, v, err) = verify_json(&reviewer, &dir, &clock);
    assert_eq!(code, 0, "{v} {err}");
    // and one who writes nonsense is told so, not let through
    reviewer.git_ok(&dir, &["config", "receipt.checkpointMaxAge", "forever"]);
    let r = reviewer.receipt(&dir, &["verify", "--since-checkpoint"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("not an age"), "{r}");
}

#[test]
fn a_checkpoint_by_an_untrusted_key_or_with_a_tampered_payload_is_refused_as_forged() {
    let env = Env::new();
    let s = served(&env);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    let cref = format!("refs/receipt-checkpoints/{}", s.writer);

    // an outsider's checkpoint: signed, so the server keeps it, but it counts
    // for nothing, and the outsider is told why
    let outsider = Env::new();
    let odir = clone(&outsider, &s.url, "outsider");
    outsider.receipt_ok(&odir, &["fetch"]);
    let r = outsider.receipt(&odir, &["checkpoint", "--push"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("not a [signer]"), "{r}");

    let reviewer = Env::new();
    let dir = clone(&reviewer, &s.url, "reviewer");
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    let r = reviewer.receipt(&dir, &["verify", "--since-checkpoint"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("not used"), "{r}");
    assert!(r.stderr.contains("FORGED"), "{r}");
    // with only the outsider's, there is nothing to start from
    reviewer.git_ok(&dir, &["update-ref", "-d", &cref]);
    let r = reviewer.receipt(&dir, &["verify", "--since-checkpoint"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("FORGED"), "{r}");
    assert!(r.stderr.contains("does not hold"), "{r}");

    // a tampered payload on top of the trusted signer's chain: its tip moved
    // back to the first receipt, the signature kept
    let file = env.git_ok(&s.dev, &["show", &format!("{cref}:checkpoint.json")]);
    let mut envelope: serde_json::Value = serde_json::from_str(file.trim()).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64.decode(envelope["payload"].as_str().unwrap()).unwrap();
    let mut p: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    p["sequence"] = 1.into();
    p["prev"] = format!("sha256:{}", "0".repeat(64)).into();
    let first = rev(&env, &s.dev, &format!("refs/receipts/{}~1", s.writer));
    p["chains"][&s.writer]["tip"] = first.into();
    envelope["payload"] = b64.encode(serde_json::to_vec(&p).unwrap()).into();
    let forged_file = env.path("forged.json");
    std::fs::write(&forged_file, serde_json::to_vec(&envelope).unwrap()).unwrap();
    let blob = env.git_ok(
        &s.dev,
        &["hash-object", "-w", forged_file.to_str().unwrap()],
    );
    let tree = env.git_input(
        &s.dev,
        &["mktree"],
        format!("100644 blob {}\tcheckpoint.json\n", blob.trim()).as_bytes(),
    );
    let parent = rev(&env, &s.dev, &cref);
    let forged = env.git_ok(
        &s.dev,
        &["commit-tree", tree.trim(), "-p", &parent, "-m", "forged"],
    );
    let forged = forged.trim();
    // the server refuses it
    let push = env.git(&s.dev, &["push", &s.url, &format!("{forged}:{cref}")]);
    assert_ne!(push.code, 0, "{push}");
    assert!(push.stderr.contains("checkpoint"), "{push}");
    assert_eq!(rev(&env, &s.bare, &cref), parent, "the server's ref moved");
    // a hostile server serves it anyway: a reader's fetch refuses it
    env.git_ok(&s.dev, &["update-ref", "refs/tmp/forged", forged]);
    let dev = s.dev.display().to_string();
    env.git_ok(
        &s.bare,
        &["fetch", "-q", &dev, "refs/tmp/forged:refs/tmp/forged"],
    );
    env.git_ok(&s.bare, &["update-ref", "-d", "refs/tmp/forged"]);
    env.git_ok(&s.bare, &["update-ref", &cref, forged]);
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("REFUSED"), "{r}");
    assert_eq!(
        rev(&reviewer, &dir, &cref),
        parent,
        "the reader's ref moved"
    );
    // and one planted by hand here is not started from
    reviewer.git_ok(&dir, &["fetch", "-q", &s.url, &format!("+{cref}:{cref}")]);
    let r = reviewer.receipt(&dir, &["verify", "--since-checkpoint"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("forged or damaged"), "{r}");
}

#[test]
fn a_server_that_rolls_back_checkpoints_or_a_chain_below_one_is_caught() {
    let env = Env::new();
    let s = served(&env);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    let cref = format!("refs/receipt-checkpoints/{}", s.writer);
    let first = rev(&env, &s.dev, &cref);
    change_src(&env, &s.dev, "second\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);
    let r = env.receipt(&s.dev, &["checkpoint", "--push"]);
    assert!(r.stdout.contains("checkpoint #1"), "{r}");
    let second = rev(&env, &s.dev, &cref);

    let reviewer = Env::new();
    let dir = clone(&reviewer, &s.url, "reviewer");
    reviewer.receipt_ok(&dir, &["fetch"]);
    assert_eq!(rev(&reviewer, &dir, &cref), second);

    // the server's hook refuses a push that rolls the checkpoints back
    let push = env.git(
        &s.dev,
        &["push", "--force", &s.url, &format!("{first}:{cref}")],
    );
    assert_ne!(push.code, 0, "{push}");
    assert!(push.stderr.contains("append-only"), "{push}");
    let push = env.git(&s.dev, &["push", &s.url, &format!(":{cref}")]);
    assert_ne!(push.code, 0, "deleted: {push}");
    assert_eq!(rev(&env, &s.bare, &cref), second);

    // an admin (or a hostile server) rolls it back anyway: the reader keeps
    // what it accepted, and says so
    env.git_ok(&s.bare, &["update-ref", &cref, &first]);
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("ROLLED BACK"), "{r}");
    assert_eq!(rev(&reviewer, &dir, &cref), second);

    // a chain rolled back below the tip the checkpoint recorded: a fresh clone
    // that starts from the checkpoint reports it
    env.git_ok(&s.bare, &["update-ref", &cref, &second]);
    let chain = format!("refs/receipts/{}", s.writer);
    let older = rev(&env, &s.bare, &format!("{chain}~1"));
    env.git_ok(&s.bare, &["update-ref", &chain, &older]);
    let fresh = Env::new();
    let fdir = clone(&fresh, &s.url, "fresh");
    fresh.receipt_ok(&fdir, &["fetch"]);
    let (code, v, err) = verify_json(&fresh, &fdir, &[]);
    assert_eq!(code, 1, "{v} {err}");
    let kinds: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["checkpoint"], "{v}");
    assert!(
        v["findings"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("rolled back"),
        "{v}"
    );
}

#[test]
fn no_checkpoint_is_signed_over_a_chain_that_does_not_verify() {
    let env = Env::new();
    let s = served(&env);
    // a second parent on the chain's tip: a finding
    let chain = format!("refs/receipts/{}", s.writer);
    let tip = rev(&env, &s.dev, &chain);
    let merged = env.git_ok(
        &s.dev,
        &[
            "commit-tree",
            &format!("{tip}^{{tree}}"),
            "-p",
            &tip,
            "-p",
            "HEAD",
            "-m",
            "merge",
        ],
    );
    env.git_ok(&s.dev, &["update-ref", &chain, merged.trim()]);
    let r = env.receipt(&s.dev, &["checkpoint"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("no checkpoint signed"), "{r}");
    let cref = format!("refs/receipt-checkpoints/{}", s.writer);
    assert_ne!(
        env.git(&s.dev, &["rev-parse", "--verify", "-q", &cref])
            .code,
        0
    );
}

/// Seconds since the epoch, `days` from now, for `GIT_RECEIPT_TEST_NOW`.

#[test]
fn a_fresh_clone_fetches_since_a_checkpoint_only_the_entries_after_it_and_decides_from_them() {
    let env = Env::new();
    let s = served(&env);
    // before the checkpoint, and more than a week before it
    let then = days_ago(40);
    for i in 0..4 {
        change_src(&env, &s.dev, &format!("before {i}\n"));
        let r = env.receipt_with(&s.dev, &["run", "test"], &[("GIT_RECEIPT_TEST_NOW", &then)]);
        assert_eq!(r.code, 0, "{r}");
    }
    env.receipt_ok(&s.dev, &["push"]);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    for i in 0..3 {
        change_src(&env, &s.dev, &format!("after {i}\n"));
        env.receipt_ok(&s.dev, &["run", "test"]);
    }
    env.receipt_ok(&s.dev, &["push"]);
    env.git_ok(&s.dev, &["push", "-q", "origin", "main"]);
    let chain = format!("refs/receipts/{}", s.writer);
    assert_eq!(
        env.git_ok(&s.dev, &["rev-list", "--count", &chain]).trim(),
        "9"
    );

    let reviewer = Env::new();
    let dir = clone(&reviewer, &s.url, "reviewer");
    let r = reviewer.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 0, "{r}");
    // a fresh clone has no index to rebuild: no notice says so
    assert!(!r.stderr.contains("rebuilding"), "{r}");
    // the three after it by date (a week before the checkpoint, where the
    // checkpoint's entry is older), then the four entries it needs at once
    assert!(
        r.stderr
            .contains("1 chain taken from its tips up (2 fetches: since "),
        "{r}"
    );
    assert!(r.stderr.contains(", depth 4), 0 whole"), "{r}");
    assert!(
        r.stderr
            .contains(&format!("new chain {}: 4 receipts", s.writer)),
        "the checkpoint's entry and three: {r}"
    );
    // stock git: the checkpoint's entry and the three after it, nothing older
    assert_eq!(
        reviewer
            .git_ok(&dir, &["rev-list", "--count", &chain])
            .trim(),
        "4"
    );
    assert_eq!(rev(&reviewer, &dir, &chain), rev(&env, &s.dev, &chain));
    assert!(dir.join(".git/shallow").exists());
    // the branches are whole: doctor does not call the clone shallow
    let d = reviewer.receipt(&dir, &["doctor", "--offline"]);
    assert!(d.stdout.contains("taken from a signed checkpoint"), "{d}");
    assert!(!d.stdout.contains("this clone is shallow"), "{d}");
    // verify starts from the checkpoint; the whole walk cannot, and says why
    let (code, v, err) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["receipts"], 3, "{v}");
    // the notes the fetch built from the chain cut at the edge: not read again
    assert_eq!(v["notes_built_here"], 1, "{v}");
    let whole = reviewer.receipt(&dir, &["verify"]);
    assert_ne!(whole.code, 0, "{whole}");
    assert!(whole.stdout.contains("--since-checkpoint"), "{whole}");
    // decisions read the chain from the checkpoint up, with no warning
    let r = reviewer.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("warning"), "{r}");
    let log = reviewer.receipt_ok(&dir, &["log", "--json"]);
    let log: Vec<serde_json::Value> = serde_json::from_str(&log.stdout).unwrap();
    assert_eq!(log.len(), 4, "{log:?}");
    // notes show on the newest commit
    let notes = format!("refs/notes/receipts/{}", s.writer);
    reviewer.git_ok(&dir, &["notes", "--ref", &notes, "show", "HEAD"]);

    // what comes later arrives with a plain fetch, on top
    change_src(&env, &s.dev, "later\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);
    env.git_ok(&s.dev, &["push", "-q", "origin", "main"]);
    reviewer.git_ok(&dir, &["pull", "-q", "--ff-only"]);
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("1 new receipt"), "{r}");
    let (code, v, err) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["receipts"], 4, "{v}");
    let r = reviewer.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");

    // deepened, the older receipts are read again (the index notices the edge
    // moved), and the whole chain verifies
    take_the_rest_of_the_chains(&reviewer, &dir);
    let log = reviewer.receipt_ok(&dir, &["log", "--json"]);
    let log: Vec<serde_json::Value> = serde_json::from_str(&log.stdout).unwrap();
    assert_eq!(log.len(), 10, "{log:?}");
    // notes built under the old edge lack what lies below it: read again
    let (_, v, err) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(v["notes_built_here"], 0, "{v} {err}");
    assert!(v["note_lines"].as_u64().unwrap() > 0, "{v}");
    // a chain this clone has is fetched as always, never cut to a depth again
    let shallow = std::fs::read(dir.join(".git/shallow")).ok();
    let r = reviewer.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("0 chains taken from its tips up (0 fetches), 1 whole"),
        "{r}"
    );
    assert_eq!(std::fs::read(dir.join(".git/shallow")).ok(), shallow);
    assert_eq!(
        reviewer
            .git_ok(&dir, &["rev-list", "--count", &chain])
            .trim(),
        "10"
    );
    let whole = reviewer.receipt(&dir, &["verify"]);
    assert_eq!(whole.code, 0, "{whole}");

    // an age: the newest checkpoint at least that old
    let fresh = Env::new();
    let fdir = clone(&fresh, &s.url, "aged");
    let clock = days_from_now(10);
    let at = [("GIT_RECEIPT_TEST_NOW", clock.as_str())];
    let r = fresh.receipt_with(&fdir, &["fetch", "--since", "90d"], &at);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("NONE-OLD-ENOUGH"), "{r}");
    let r = fresh.receipt_with(&fdir, &["fetch", "--since", "5d"], &at);
    assert_eq!(r.code, 0, "{r}");
    // 5 needed (the checkpoint's entry and four after it): a depth is exact
    // up to 8, never the whole chain of 10
    let n: u32 = fresh
        .git_ok(&fdir, &["rev-list", "--count", &chain])
        .trim()
        .parse()
        .unwrap();
    assert_eq!(n, 5, "{n}");
    let (code, v, err) = verify_json(&fresh, &fdir, &at);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["receipts"], 4, "{v}");
    let r = fresh.receipt(&fdir, &["fetch", "--since", "soon"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("neither `checkpoint` nor an age"), "{r}");
}

#[test]
fn a_chain_rolled_back_below_its_checkpointed_tip_is_not_taken_by_fetch_since() {
    let env = Env::new();
    let s = served(&env);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    let chain = format!("refs/receipts/{}", s.writer);
    let older = rev(&env, &s.bare, &format!("{chain}~1"));
    env.git_ok(&s.bare, &["update-ref", &chain, &older]);
    let fresh = Env::new();
    let dir = clone(&fresh, &s.url, "fresh");
    let r = fresh.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("rolled back"), "{r}");
    // its tip is older than a week before the checkpoint, so a cut by date
    // selects nothing (git's server ends the fetch); at depth 1 its index says
    // it is below the checkpoint's: nothing is fetched deeper
    assert!(r.stderr.contains("(1 fetch: depth 1)"), "{r}");
    assert_eq!(
        fresh
            .git_ok(
                &dir,
                &[
                    "rev-list",
                    "--count",
                    &format!("refs/receipts-incoming/origin/{}", s.writer)
                ]
            )
            .trim(),
        "1"
    );
    assert_ne!(
        fresh
            .git(&dir, &["rev-parse", "--verify", "-q", &chain])
            .code,
        0
    );
}

/// Two trusted writers whose chains need different depths since the
/// checkpoint: one fetch per depth, the first group's chains admitted while git
/// fetches the next, with the answer a fetch one group at a time gives: the
/// honest chain whole, and a tip the server forged (the real tip's receipt
/// with one value changed) refused there, the entries below it taken.
#[test]
fn chains_fetched_at_two_depths_since_a_checkpoint_are_each_admitted_as_alone() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let key = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    // a second key of the same person, by OpenSSH
    let k2 = env.home.join("k2");
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "k2", "-f"])
        .arg(&k2)
        .output()
        .expect("ssh-keygen");
    assert!(out.status.success(), "{out:?}");
    let k2_pub = std::fs::read_to_string(k2.with_extension("pub")).unwrap();
    let k2_pub: String = k2_pub
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    for (name, k) in [("ci", key.trim()), ("ci2", k2_pub.as_str())] {
        env.git_ok(
            &seed,
            &[
                "config",
                "-f",
                ".gitreceipts",
                &format!("signer.{name}.key"),
                k,
            ],
        );
    }
    env.git_ok(&seed, &["commit", "-qam", "trust ci and ci2"]);
    let (bare, url) = daemon.bare(&env, "served.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    env.receipt_ok(&bare, &["install-hooks", "--server"]);
    let dev = clone(&env, &url, "dev");
    let second = [("GIT_RECEIPT_SIGNING_KEY", k2.to_str().unwrap())];
    let run_as = |with: &[(&str, &str)], n: usize, what: &str| {
        for i in 0..n {
            change_src(&env, &dev, &format!("{what} {i}\n"));
            let r = env.receipt_with(&dev, &["run", "test"], with);
            assert_eq!(r.code, 0, "{r}");
        }
        let r = env.receipt_with(&dev, &["push"], with);
        assert_eq!(r.code, 0, "{r}");
    };
    // dated more than a week before the checkpoint, and within it
    let (long_ago, days_3) = (days_ago(40), days_ago(3));
    let k2 = k2.to_str().unwrap();
    run_as(&[("GIT_RECEIPT_TEST_NOW", &long_ago)], 1, "first");
    run_as(
        &[
            ("GIT_RECEIPT_SIGNING_KEY", k2),
            ("GIT_RECEIPT_TEST_NOW", &long_ago),
        ],
        1,
        "second",
    );
    run_as(
        &[
            ("GIT_RECEIPT_SIGNING_KEY", k2),
            ("GIT_RECEIPT_TEST_NOW", &days_3),
        ],
        2,
        "second, that week",
    );
    env.receipt_ok(&dev, &["checkpoint", "--push"]);
    run_as(&[], 2, "first after");
    run_as(&second, 5, "second after");
    let writers: Vec<String> = env
        .git_ok(
            &dev,
            &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
        )
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(writers.len(), 2, "{writers:?}");
    let count = |dir: &Path, r: &str| env.git_ok(dir, &["rev-list", "--count", r]);
    let (short, long) = if count(&dev, &writers[0]) == "3" {
        (writers[0].clone(), writers[1].clone())
    } else {
        (writers[1].clone(), writers[0].clone())
    };
    assert_eq!(
        (count(&dev, &short), count(&dev, &long)),
        ("3".into(), "8".into())
    );

    // the server forges the short chain's tip: its receipt, one value changed
    let below = forge_tip_now(&env, &bare, &short, "\"duration_ms\":", "\"duration_ms\":1");

    let fresh = Env::new();
    let dir = clone(&fresh, &url, "fresh");
    let r = fresh.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 1, "{r}");
    // both moved: one fetch cut by date a week before the checkpoint. The
    // long chain's checkpointed entry is in that week: it came with it (and
    // the entry before it, in that week too), and was admitted while git
    // fetched the short one's at depth 3 (its entry at the checkpoint and
    // two), as that week left it short
    let at = r
        .stderr
        .find("2 chains taken from its tips up (2 fetches: since ");
    assert!(at.is_some(), "{r}");
    assert!(r.stderr.contains(", depth 3), 0 whole"), "{r}");
    assert!(r.stderr.contains("signature"), "{r}");
    assert_eq!(
        rev(&fresh, &dir, &short),
        below,
        "taken up to the forged tip"
    );
    assert_eq!(rev(&fresh, &dir, &long), rev(&env, &dev, &long));
    assert_eq!(count(&dir, &long), "7");
    assert_eq!(count(&dir, &short), "2");
    let (code, v, err) = verify_json(&fresh, &dir, &[]);
    assert_eq!(code, 0, "what was taken verifies: {v} {err}");
}

/// The server forges `chain`'s tip in `bare`: its `receipt.json` with the first
/// `from` replaced by `to`, the rest of its tree kept, on the same parent, the
/// commit dated now as a real tip is (the tests' git dates its commits in
/// February, and a tip older than a cut by date would come whole). Returns
/// the parent, the entry below the forged tip.
fn forge_tip_now(env: &Env, bare: &Path, chain: &str, from: &str, to: &str) -> String {
    let tip = rev(env, bare, chain);
    let text = env.git_ok(bare, &["cat-file", "blob", &format!("{tip}:receipt.json")]);
    let forged = text.replacen(from, to, 1);
    assert_ne!(forged, text);
    let blob = env.git_input(bare, &["hash-object", "-w", "--stdin"], forged.as_bytes());
    let listing = env.git_ok(bare, &["ls-tree", &format!("{tip}^{{tree}}")]);
    let lines: String = listing
        .lines()
        .map(|l| match l.strip_suffix("\treceipt.json") {
            Some(_) => format!("100644 blob {blob}\treceipt.json\n"),
            None => format!("{l}\n"),
        })
        .collect();
    let tree = env.git_input(bare, &["mktree"], lines.as_bytes());
    let below = rev(env, bare, &format!("{tip}~1"));
    let mut cmd = std::process::Command::new("git");
    env.seal(&mut cmd);
    let out = cmd
        .current_dir(bare)
        .env("GIT_COMMITTER_DATE", format!("@{}", days_ago(0)))
        .args(["commit-tree", tree.trim(), "-p", &below, "-m", "forged"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let bad = String::from_utf8(out.stdout).unwrap();
    env.git_ok(bare, &["update-ref", chain, bad.trim()]);
    below
}

/// A tip the server forged to claim an index far beyond the chain (up to a
/// receipt's largest, past what `git fetch --depth` can say): `fetch --since`
/// still fetches, at git's largest depth (the whole chain), and the forged tip
/// is refused by admission, the entries below it taken.
#[test]
fn a_forged_tip_claiming_a_huge_index_is_fetched_whole_and_refused_not_an_error() {
    let env = Env::new();
    let s = served(&env);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    change_src(&env, &s.dev, "after\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);
    let chain = format!("refs/receipts/{}", s.writer);
    // "index":3 becomes "index":10995116273 (past 2^31, within 2^53)
    forge_tip_now(&env, &s.bare, &chain, "\"index\":", "\"index\":1099511627");

    // a CI clone: its branch cut at depth 1
    let fresh = Env::new();
    let dir = clone_with(&fresh, &s.url, "fresh", &["--depth", "1"]);
    let r = fresh.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(!r.stderr.contains("not a positive number"), "{r}");
    // one below git's largest, which would make the branch whole too
    assert!(r.stderr.contains(", depth 2147483646), 0 whole"), "{r}");
    assert!(r.stderr.contains("REJECTED"), "{r}");
    // the entries below the forged tip: the checkpoint's and nothing else new
    assert_eq!(
        rev(&fresh, &dir, &chain),
        rev(&env, &s.dev, &format!("{chain}~1"))
    );
    assert_eq!(
        fresh.git_ok(&dir, &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );
}

/// Junk on a chain's tip (a server without the hook took it): `fetch --since`
/// cannot read how deep to fetch, and says so, not "rolled back"; a plain
/// fetch then takes the entries below the junk.
#[test]
fn a_junk_tip_is_named_as_such_by_fetch_since_and_a_plain_fetch_takes_what_is_below_it() {
    let env = Env::new();
    let s = served(&env);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    let chain = format!("refs/receipts/{}", s.writer);
    let tip = rev(&env, &s.bare, &chain);
    let blob = env.git_input(&s.bare, &["hash-object", "-w", "--stdin"], b"not json\n");
    let tree = env.git_input(
        &s.bare,
        &["mktree"],
        format!("100644 blob {blob}\treceipt.json\n").as_bytes(),
    );
    let junk = env.git_ok(&s.bare, &["commit-tree", &tree, "-p", &tip, "-m", "junk"]);
    env.git_ok(&s.bare, &["update-ref", &chain, &junk]);
    let fresh = Env::new();
    let dir = clone(&fresh, &s.url, "fresh");
    let r = fresh.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("is not a receipt"), "{r}");
    assert!(r.stderr.contains("without --since"), "{r}");
    assert!(!r.stderr.contains("rolled back"), "{r}");
    // as it advises: unshallow, then a plain fetch
    fresh.git_ok(&dir, &["fetch", "-q", "--unshallow", "origin"]);
    let r = fresh.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("took 2 new receipts; REJECTED"), "{r}");
    assert_eq!(rev(&fresh, &dir, &chain), tip);
}

#[test]
fn a_run_from_a_checkpoint_passes_over_notes_this_clone_built_whole_and_reads_any_other() {
    let env = Env::new();
    let s = served(&env);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    change_src(&env, &s.dev, "after the checkpoint\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);
    // a second chain under the same key, so a fetch builds two writers'
    // notes together (`index_notes_of`'s batch)
    let two = clone(&env, &s.url, "two");
    env.git_ok(&two, &["config", "receipt.chain", "two"]);
    env.receipt_ok(&two, &["run", "test"]);
    env.receipt_ok(&two, &["push"]);

    let reviewer = Env::new();
    let dir = clone(&reviewer, &s.url, "reviewer");
    reviewer.receipt_ok(&dir, &["fetch"]);
    let whole_file = dir.join(".git/receipt-notes-whole");
    assert!(whole_file.exists(), "the fetch records the notes it built");
    // a clean run from the checkpoint: the writers whose notes it passed
    // over as built here, and the note lines it read
    let clean_run = |built: u64, lines: u64| {
        let (code, v, err) = verify_json(&reviewer, &dir, &[]);
        assert_eq!(code, 0, "{v} {err}");
        assert_eq!(
            (v["notes_built_here"].as_u64(), v["note_lines"].as_u64()),
            (Some(built), Some(lines)),
            "{v}"
        );
    };
    // the fetch built both writers' notes from the chains it checked: a run
    // from the checkpoint reads none of them
    clean_run(2, 0);
    let r = reviewer.receipt(&dir, &["verify", "--since-checkpoint"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains(
            "(the notes of 2 writers as git-receipt built them here from the chains verified)"
        ),
        "{r}"
    );
    // a whole verify reads every note whatever the file says
    let whole = reviewer.receipt(&dir, &["verify", "--json"]);
    let whole: serde_json::Value = serde_json::from_str(&whole.stdout).unwrap();
    assert_eq!(whole["notes_built_here"], 0, "{whole}");
    let all_lines = whole["note_lines"].as_u64().unwrap();
    assert!(all_lines >= 4, "{whole}");

    // a new receipt, fetched: the notes built on whole notes are whole
    change_src(&env, &s.dev, "later still\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);
    reviewer.receipt_ok(&dir, &["fetch"]);
    clean_run(2, 0);

    // the dev's notes moved by hand (a forged line on the newest commit
    // its chain is about): read again, and the line is found
    let notes = format!("receipts/{}", s.writer);
    let head = rev(&env, &s.dev, "HEAD");
    reviewer.git_ok(&dir, &["fetch", "-q", "origin", "main"]);
    reviewer.git_ok(
        &dir,
        &[
            "notes",
            "--ref",
            &notes,
            "append",
            "-m",
            "0000000 forged",
            &head,
        ],
    );
    let (code, v, err) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(
        v["notes_built_here"], 1,
        "the other writer's are as built: {v} {err}"
    );
    assert!(v["note_lines"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(code, 1, "the forged line is a finding: {v} {err}");
    let found = v["findings"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        found.contains("is corrupt at line 3") && found.contains("forged"),
        "{v}"
    );
    // `reindex` builds them whole again
    reviewer.receipt_ok(&dir, &["reindex"]);
    clean_run(2, 0);

    // a file this user did not seal (another user's, whose index key is
    // theirs), or a damaged one: every note on what came after is read
    let other = Env::new();
    let theirs = clone(&other, &s.url, "other");
    other.receipt_ok(&theirs, &["fetch"]);
    let sealed = std::fs::read(&whole_file).unwrap();
    std::fs::copy(theirs.join(".git/receipt-notes-whole"), &whole_file).unwrap();
    let (code, v, err) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["notes_built_here"], 0, "{v}");
    assert!(v["note_lines"].as_u64().unwrap() > 0, "{v}");
    let mut damaged = sealed.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 1;
    std::fs::write(&whole_file, &damaged).unwrap();
    let (_, v, _) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(v["notes_built_here"], 0, "{v}");
    std::fs::write(&whole_file, &sealed).unwrap();
    let (_, v, _) = verify_json(&reviewer, &dir, &[]);
    assert_eq!(v["notes_built_here"], 2, "put back: {v}");
}

/// `fetch --since` fetches a chain that did not move since the checkpoint at
/// depth 1 (cut by date, git would send it whole), the chains that moved in one
/// fetch cut by date a week before the checkpoint, and tops up by depth only a
/// chain that date left short. A chain whose new tip is dated before the cut
/// (its writer's clock behind) comes whole, as git sends it: dates choose what
/// is fetched, never what is trusted, so all three verify from the checkpoint.
#[test]
fn fetch_since_takes_a_still_chain_at_depth_1_cuts_the_moved_ones_by_date_and_tops_up_by_depth() {
    since_by_date(false);
}

/// The same over git's smart HTTP, whose stateless requests carry the shallow
/// edge and the date again in each round.
#[test]
fn fetch_since_cuts_by_date_and_tops_up_by_depth_over_smart_http_too() {
    since_by_date(true);
}

fn since_by_date(http: bool) {
    let env = Env::new();
    let s = served_on(&env, http);
    let long_ago = days_ago(40);
    let old = [("GIT_RECEIPT_TEST_NOW", long_ago.as_str())];
    // two more chains of the same key, each one receipt before the checkpoint
    let mut clones = Vec::new();
    for name in ["behind", "now"] {
        let dir = clone(&env, &s.url, name);
        env.git_ok(&dir, &["config", "receipt.chain", name]);
        change_src(&env, &dir, &format!("{name} before\n"));
        let r = env.receipt_with(&dir, &["run", "test"], &old);
        assert_eq!(r.code, 0, "{r}");
        env.receipt_ok(&dir, &["push"]);
        clones.push(dir);
    }
    // the signer's clone has all three chains: the checkpoint names them
    env.receipt_ok(&s.dev, &["fetch"]);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    // after it: one written by a clock a month behind, one now
    let behind = days_ago(30);
    for (dir, clock) in [(&clones[0], Some(behind.as_str())), (&clones[1], None)] {
        change_src(&env, dir, "after\n");
        let with: Vec<(&str, &str)> = clock
            .map(|c| ("GIT_RECEIPT_TEST_NOW", c))
            .into_iter()
            .collect();
        let r = env.receipt_with(dir, &["run", "test"], &with);
        assert_eq!(r.code, 0, "{r}");
        env.receipt_ok(dir, &["push"]);
    }
    let chain_of = |prefix: &str| {
        let refs = env.git_ok(
            &s.bare,
            &[
                "for-each-ref",
                "--format=%(refname)",
                &format!("refs/receipts/{prefix}-*"),
            ],
        );
        let refs: Vec<&str> = refs.lines().collect();
        assert_eq!(refs.len(), 1, "{refs:?}");
        refs[0].to_owned()
    };
    let (still, behind, now) = (
        format!("refs/receipts/{}", s.writer),
        chain_of("behind"),
        chain_of("now"),
    );

    let fresh = Env::new();
    let dir = clone(&fresh, &s.url, "fresh");
    let r = fresh.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("3 chains taken from its tips up (3 fetches: depth 1, since "),
        "{r}"
    );
    assert!(r.stderr.contains(", depth 2), 0 whole"), "{r}");
    // stock git: the still chain is its checkpointed entry alone; the one
    // dated behind came whole (two entries, no cut); the other is its entry
    // at the checkpoint and the one after it
    let count = |r: &str| {
        fresh
            .git_ok(&dir, &["rev-list", "--count", r])
            .trim()
            .to_owned()
    };
    assert_eq!(
        (count(&still), count(&behind), count(&now)),
        ("1".into(), "2".into(), "2".into())
    );
    for r in [&still, &behind, &now] {
        assert_eq!(rev(&fresh, &dir, r), rev(&env, &s.bare, r));
    }
    let (code, v, err) = verify_json(&fresh, &dir, &[]);
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["receipts"], 2, "{v}");
}

/// A check whose last receipt lies below the checkpoint a clone fetched from
/// reads missing there, while the whole chain has it present (its inputs did
/// not change since): `gate` and the pre-push hook say that an older receipt
/// on the remote may decide it, and how to take the rest of the chains; after
/// that command it is present. A check whose receipt is here gets no hint, and
/// neither does a clone whose chains are whole.
#[test]
fn a_check_decided_below_the_cut_of_fetch_since_says_an_older_receipt_may_decide_it() {
    let env = Env::new();
    let s = served(&env);
    // docs' receipt is entry 1; entry 2, above it, is what the checkpoint marks
    change_src(&env, &s.dev, "before\n");
    let then = days_ago(40);
    let r = env.receipt_with(&s.dev, &["run", "test"], &[("GIT_RECEIPT_TEST_NOW", &then)]);
    assert_eq!(r.code, 0, "{r}");
    env.receipt_ok(&s.dev, &["push"]);
    env.receipt_ok(&s.dev, &["checkpoint", "--push"]);
    change_src(&env, &s.dev, "after\n");
    env.receipt_ok(&s.dev, &["run", "test"]);
    env.receipt_ok(&s.dev, &["push"]);
    env.git_ok(&s.dev, &["push", "-q", "origin", "main"]);
    let docs = ["gate", "HEAD", "--require", "docs"];
    // the whole chain: docs is present, from the receipt of the same inputs
    let r = env.receipt(&s.dev, &docs);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stdout.contains("hint:"), "{r}");

    let reviewer = Env::new();
    let dir = clone(&reviewer, &s.url, "reviewer");
    let r = reviewer.receipt(&dir, &["fetch", "--since", "checkpoint"]);
    assert_eq!(r.code, 0, "{r}");
    let chain = format!("refs/receipts/{}", s.writer);
    assert_eq!(
        reviewer
            .git_ok(&dir, &["rev-list", "--count", &chain])
            .trim(),
        "2",
        "the checkpoint's entry and the one after it"
    );
    let hint = "hint: the receipt chains here start where `git receipt fetch --since` cut them: an older receipt, on origin and not fetched here, may decide docs; `git receipt fetch --unshallow origin` takes the rest of every chain";
    let r = reviewer.receipt(&dir, &docs);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("docs  missing"), "{r}");
    assert!(r.stdout.contains("fix: git receipt run docs"), "{r}");
    assert!(r.stdout.contains(hint), "{r}");
    // and to a reader of --json, among the revision's notices
    let r = reviewer.receipt(&dir, &["gate", "HEAD", "--require", "docs", "--json"]);
    assert_eq!(r.code, 1, "{r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v[0]["notices"][0], hint, "{v}");
    // a gate of many revisions asks once whether the chains are cut, and
    // gives each failing revision the hint
    let r = reviewer.receipt(&dir, &["gate", "HEAD~1", "HEAD", "--require", "docs"]);
    assert_eq!(r.code, 1, "{r}");
    assert_eq!(r.stdout.matches(hint).count(), 2, "{r}");
    let r = reviewer.receipt(
        &dir,
        &["gate", "HEAD~1", "HEAD", "--require", "docs", "--json"],
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        (&v[0]["notices"][0], &v[1]["notices"][0]),
        (&hint.into(), &hint.into()),
        "{v}"
    );
    // test's receipt is here: it passes, with no hint
    let r = reviewer.receipt(&dir, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stdout.contains("hint:"), "{r}");

    // the pre-push hook says the same of a push that must carry docs
    reviewer.receipt_ok(&dir, &["init"]);
    let contract = std::fs::read_to_string(dir.join(".gitreceipts")).unwrap();
    let required = contract.replace("\tpath = docs\n", "\tpath = docs\n\trequired = true\n");
    assert_ne!(required, contract);
    std::fs::write(dir.join(".gitreceipts"), required).unwrap();
    reviewer.git_ok(&dir, &["commit", "-qam", "require docs"]);
    let r = reviewer.git(&dir, &["push", "origin", "HEAD:refs/heads/topic"]);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("lacks fresh receipts"), "{r}");
    assert!(r.stderr.contains(hint), "{r}");

    // the hint's command takes the older receipts: the chain is whole (stock
    // git counts it), the clone is no longer shallow, the notes show the
    // older receipt again, every chain verifies whole, docs is present
    // a plain fetch leaves the cut where it is
    let r = reviewer.receipt(&dir, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        reviewer
            .git_ok(&dir, &["rev-list", "--count", &chain])
            .trim(),
        "2"
    );
    let notes = format!("refs/notes/receipts/{}", s.writer);
    // docs ran on the commit `served` made its receipts on
    let docs_commit = reviewer.git_ok(&s.dev, &["rev-parse", "HEAD~2"]);
    let shown = reviewer.git(
        &dir,
        &["notes", "--ref", &notes, "show", docs_commit.trim()],
    );
    assert!(!shown.stdout.contains("docs"), "not here before: {shown}");
    let r = reviewer.receipt(&dir, &["fetch", "--unshallow", "origin"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("took the rest of the chains a shallow fetch cut here from origin"),
        "{r}"
    );
    assert_eq!(
        reviewer
            .git_ok(&dir, &["rev-list", "--count", &chain])
            .trim(),
        reviewer
            .git_ok(&s.dev, &["rev-list", "--count", &chain])
            .trim()
    );
    assert!(!dir.join(".git/shallow").exists());
    let shown = reviewer.git_ok(
        &dir,
        &["notes", "--ref", &notes, "show", docs_commit.trim()],
    );
    assert!(shown.contains("docs"), "{shown}");
    // the fetch left the receipt index current: nothing is rebuilt after it
    let whole = reviewer.receipt(&dir, &["verify"]);
    assert_eq!(whole.code, 0, "{whole}");
    assert!(!whole.stderr.contains("rebuilding"), "{whole}");
    let r = reviewer.receipt(&dir, &["fetch", "--unshallow", "origin"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("no chain here was cut"), "{r}");
    // in a CI clone whose branch is cut at depth 1, the chains come whole and
    // the branch stays as it was (git's own --unshallow would take it whole)
    let shallow = Env::new();
    let sdir = clone_with(&shallow, &s.url, "shallow", &["--depth", "1"]);
    shallow.receipt_ok(&sdir, &["fetch", "--since", "checkpoint"]);
    let r = shallow.receipt(&sdir, &["fetch", "--unshallow"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("took the rest of the chains"), "{r}");
    assert_eq!(
        shallow
            .git_ok(&sdir, &["rev-list", "--count", &chain])
            .trim(),
        reviewer
            .git_ok(&s.dev, &["rev-list", "--count", &chain])
            .trim()
    );
    assert_eq!(
        shallow
            .git_ok(&sdir, &["rev-list", "--count", "HEAD"])
            .trim(),
        "1"
    );
    let r = reviewer.receipt(&dir, &docs);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stdout.contains("hint:"), "{r}");
    let r = reviewer.git(&dir, &["push", "origin", "HEAD:refs/heads/topic"]);
    assert_eq!(r.code, 0, "{r}");
    // with whole chains, a check that reads stale is stale: no hint
    std::fs::write(dir.join("docs/index.md"), "# changed\n").unwrap();
    reviewer.git_ok(&dir, &["commit", "-qam", "docs changed"]);
    let r = reviewer.receipt(&dir, &docs);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("docs  stale"), "{r}");
    assert!(!r.stdout.contains("hint:"), "{r}");

    // `run --stale` in a clone cut the same way runs docs all the same, and
    // says why it may not have had to; the hint names the clone's one remote
    let ci = Env::new();
    let cdir = clone_with(&ci, &s.url, "ci", &["-o", "upstream"]);
    ci.receipt_ok(&cdir, &["fetch", "--since", "checkpoint", "upstream"]);
    let r = ci.receipt(&cdir, &["run", "--stale"]);
    assert_eq!(r.code, 0, "{r}");
    let upstream = hint.replace("origin", "upstream");
    assert!(
        r.stderr
            .contains(&format!("{upstream}; --stale runs it here all the same")),
        "{r}"
    );
    let r = ci.receipt(&cdir, &docs);
    assert_eq!(r.code, 0, "docs was run: {r}");
}
