//! Retention (issue 30): `git receipt retain`, run in the server's repository,
//! drops old receipts of commits no protected branch or tag reaches to stubs
//! that keep their ids. The chains still verify there and in a fresh clone
//! fetched through a hooked `git daemon` on 127.0.0.1; `show` of a dropped id
//! says what was dropped; decisions on the protected branch do not move. Stock
//! git is the oracle for what the server holds.

use std::path::{Path, PathBuf};

use crate::common::{Daemon, Env, change_src, clone, days_from_now};

fn verify(env: &Env, dir: &Path, at: &[(&str, &str)]) -> serde_json::Value {
    let r = env.receipt_with(dir, &["verify", "--json"], at);
    assert_eq!(r.code, 0, "{r}");
    serde_json::from_str(&r.stdout).unwrap()
}

/// The id of the newest receipt `writer` wrote, from its chain.
fn newest_id(env: &Env, dir: &Path) -> String {
    let r = env.receipt_ok(dir, &["log", "--json", "-n", "1"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    v[0]["id"].as_str().unwrap().to_owned()
}

/// A bare repository served by `daemon`, seeded with a `.gitreceipts` that
/// trusts `env`'s key as `ci` and sets `contract` besides: (its path, its URL).
fn served(env: &Env, daemon: &Daemon, contract: &[(&str, &str)]) -> (PathBuf, String) {
    let seed = env.fixture_repo("make_basic_repo.sh", "seed");
    let key = env.receipt_ok(&seed, &["key", "generate"]).stdout;
    let mut settings = vec![("signer.ci.key", key.trim())];
    settings.extend_from_slice(contract);
    for (name, value) in settings {
        env.git_ok(&seed, &["config", "-f", ".gitreceipts", name, value]);
    }
    env.git_ok(&seed, &["commit", "-qam", "trust ci"]);
    let (bare, url) = daemon.bare(env, "served.git");
    env.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    (bare, url)
}

#[test]
fn retain_on_the_server_drops_old_unreached_receipts_to_stubs_and_every_chain_still_verifies() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = served(
        &env,
        &daemon,
        &[
            ("review.code.path", "src"),
            ("review.code.self-approve", "true"),
        ],
    );
    env.receipt_ok(&bare, &["install-hooks", "--server", "--protect", "main"]);
    let dev = clone(&env, &url, "dev");
    // main: a receipt; a feature branch that was abandoned: two; main again
    env.receipt_ok(&dev, &["run", "test"]);
    env.git_ok(&dev, &["checkout", "-q", "-b", "feature"]);
    change_src(&env, &dev, "abandoned 1\n");
    env.receipt_ok(&dev, &["run", "test"]);
    let gone_1 = newest_id(&env, &dev);
    change_src(&env, &dev, "abandoned 2\n");
    env.receipt_ok(&dev, &["run", "test"]);
    let gone_2 = newest_id(&env, &dev);
    env.receipt_ok(&dev, &["review", "HEAD", "--approve"]);
    env.git_ok(&dev, &["checkout", "-q", "main"]);
    change_src(&env, &dev, "kept\n");
    env.receipt_ok(&dev, &["run", "test"]);
    env.receipt_ok(&dev, &["review", "HEAD", "--approve"]);
    env.receipt_ok(&dev, &["push"]);
    env.git_ok(&dev, &["push", "-q", "origin", "main"]);
    env.receipt_ok(&dev, &["checkpoint", "--push"]);
    let writer = env.only_writer(&dev);
    // the same writer's second clone, holding every receipt
    let dev2 = clone(&env, &url, "dev2");
    env.receipt_ok(&dev2, &["fetch"]);
    // and a reviewer's clone, holding every receipt, writing none
    let reviewer = Env::new();
    let watcher = clone(&reviewer, &url, "watcher");
    reviewer.receipt_ok(&watcher, &["fetch"]);
    let chain = format!("refs/receipts/{writer}");
    let tip = env.git_ok(&bare, &["rev-parse", &chain]).trim().to_owned();
    let later = days_from_now(60);
    let at = [("GIT_RECEIPT_TEST_NOW", later.as_str())];

    // young receipts stay; a dry run changes nothing
    let r = env.receipt_with(&bare, &["retain", "--older-than", "90d"], &at);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("dropped 0 receipts"), "{r}");
    let r = env.receipt_with(&bare, &["retain", "--older-than", "30d", "--dry-run"], &at);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stdout
            .contains(&format!("would drop {writer} #1 {gone_1} test")),
        "{r}"
    );
    assert!(r.stdout.contains(&gone_2), "{r}");
    assert_eq!(r.stdout.lines().count(), 2, "{r}");
    assert_eq!(env.git_ok(&bare, &["rev-parse", &chain]).trim(), tip);
    let r = env.receipt_with(&bare, &["retain", "--older-than", "1h"], &at);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("less than a day"), "{r}");

    let r = env.receipt_with(&bare, &["retain", "--older-than", "30d", "--json"], &at);
    assert_eq!(r.code, 0, "{r}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["dropped"], 2, "{v}");
    assert_eq!(v["kept"]["reached"], 2, "{v}"); // both checks of main's commits
    assert_eq!(v["kept"]["decision"], 1, "{v}"); // the feature's review
    assert_eq!(v["kept"]["tip"], 1, "{v}"); // main's review
    let new_tip = env.git_ok(&bare, &["rev-parse", &chain]).trim().to_owned();
    assert_ne!(new_tip, tip);
    assert_eq!(v["chains"][0]["tip"], new_tip.as_str(), "{v}");
    // stock git: the server's history is whole, the old chain is unreachable
    env.git_ok(&bare, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(
        env.git_ok(&bare, &["rev-list", "--count", &chain]).trim(),
        "6" // 4 receipts, 2 stubs
    );
    let stubs = env.git_ok(&bare, &["log", "--format=%s", &chain]);
    assert_eq!(
        stubs
            .lines()
            .filter(|l| l.starts_with("stub: test #"))
            .count(),
        2,
        "{stubs}"
    );
    let v = verify(&env, &bare, &at);
    assert_eq!(
        (v["receipts"].as_u64(), v["stubs"].as_u64()),
        (Some(4), Some(2)),
        "{v}"
    );

    // a fresh clone takes the rewritten chain, verifies it, and says what went
    let fresh = clone(&env, &url, "fresh");
    let r = env.receipt_with(&fresh, &["fetch"], &at);
    assert_eq!(r.code, 0, "{r}");
    let v = verify(&env, &fresh, &at);
    assert_eq!(
        (v["receipts"].as_u64(), v["stubs"].as_u64()),
        (Some(4), Some(2)),
        "{v}"
    );
    let r = env.receipt_with(&fresh, &["verify"], &at);
    assert!(r.stderr.contains("2 stubs dropped by retention"), "{r}");
    // a checkpoint signed before the retention recorded the old tip: the
    // rewritten chain does not descend from it, and a reader says so until a
    // trusted signer checkpoints the rewrite (below)
    let r = env.receipt(&fresh, &["verify", "--since-checkpoint"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("rolled back or rewritten"), "{r}");
    let r = env.receipt_with(&fresh, &["show", &gone_1], &at);
    assert_ne!(r.code, 0, "{r}");
    assert!(r.stderr.contains("was dropped by retention"), "{r}");
    assert!(
        r.stderr
            .contains(&format!("#1 of chain {writer}, check \"test\"")),
        "{r}"
    );
    let r = env.receipt_with(&fresh, &["show", &gone_2[..20]], &at);
    assert!(r.stderr.contains("was dropped by retention"), "{r}");
    let r = env.receipt_with(&fresh, &["show", "sha256:0000"], &at);
    assert!(r.stderr.contains("no receipt"), "{r}");
    // main's check does not move
    let r = env.receipt_with(&fresh, &["status", "origin/main", "--json"], &at);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    let test = v["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "test"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(test["state"], "present", "{r}");
    // retention again finds nothing more
    let r = env.receipt_with(&bare, &["retain", "--older-than", "30d"], &at);
    assert!(r.stderr.contains("dropped 0 receipts"), "{r}");
    assert!(r.stderr.contains("2 stubs were already there"), "{r}");

    // the writer's clone, which holds every receipt, takes the rewrite after
    // checking each stub against the same rule, with a receipt of its own on top
    change_src(&env, &dev, "after retention\n");
    env.receipt_ok(&dev, &["run", "test"]);
    let local = newest_id(&env, &dev);
    let r = env.receipt_with(&dev, &["fetch"], &at);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("dropped 2 old receipts here to retention stubs"),
        "{r}"
    );
    assert!(r.stderr.contains("with your 1 receipt on top"), "{r}");
    let v = verify(&env, &dev, &at);
    assert_eq!(
        (v["receipts"].as_u64(), v["stubs"].as_u64()),
        (Some(5), Some(2)),
        "{v}"
    );
    assert_eq!(newest_id(&env, &dev), local);
    let r = env.receipt_with(&dev, &["show", &gone_1], &at);
    assert!(r.stderr.contains("was dropped by retention"), "{r}");
    // and its push is a fast-forward of the server's chain
    let r = env.receipt_with(&dev, &["push"], &at);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &chain]).trim(),
        env.git_ok(&dev, &["rev-parse", &chain]).trim()
    );
    // the reviewer's clone takes the rewrite and the receipt above it
    let r = reviewer.receipt_with(&watcher, &["fetch"], &at);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("dropped 2 old receipts here to retention stubs")
            && r.stderr.contains("took its chain and 1 new receipt"),
        "{r}"
    );
    assert_eq!(
        reviewer.git_ok(&watcher, &["rev-parse", &chain]).trim(),
        env.git_ok(&bare, &["rev-parse", &chain]).trim()
    );
    // its checkpoint of the rewrite, checked on the way in, vouches for it
    env.receipt_with(&dev, &["checkpoint", "--push"], &at);
    let r = env.receipt_with(&fresh, &["fetch"], &at);
    assert_eq!(r.code, 0, "{r}");
    let r = env.receipt_with(&fresh, &["verify", "--since-checkpoint", "--json"], &at);
    assert_eq!(r.code, 0, "{r}");

    // the second clone pushes a new receipt without fetching first: it takes
    // the rewrite (checked) and signs nothing that was dropped again
    change_src(&env, &dev2, "from the second clone\n");
    env.receipt_ok(&dev2, &["run", "test"]);
    let r = env.receipt_with(&dev2, &["push"], &at);
    assert_eq!(r.code, 0, "{r}");
    let v = verify(&env, &bare, &at);
    assert_eq!(
        (v["receipts"].as_u64(), v["stubs"].as_u64()),
        (Some(6), Some(2)),
        "{v}"
    );
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", &chain]).trim(),
        env.git_ok(&dev2, &["rev-parse", &chain]).trim()
    );
    let r = env.receipt_with(&dev2, &["show", &gone_2], &at);
    assert!(r.stderr.contains("was dropped by retention"), "{r}");

    // a server that stubs a receipt of a commit main reaches (here it
    // protects another branch) is refused by a clone, which keeps its chain
    let first = env.git_ok(&bare, &["rev-list", "--max-parents=0", "main"]);
    env.git_ok(&bare, &["branch", "release", first.trim()]);
    env.git_ok(&bare, &["config", "receipt.protectedBranch", "release"]);
    let r = env.receipt_with(&bare, &["retain", "--older-than", "30d", "--json"], &at);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(v["dropped"].as_u64().unwrap() >= 1, "{r}");
    let before = env.git_ok(&fresh, &["rev-parse", &chain]);
    let r = env.receipt_with(&fresh, &["fetch"], &at);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stderr.contains("REJECTED, local chain unchanged"), "{r}");
    assert!(r.stderr.contains("retention keeps receipt"), "{r}");
    assert!(r.stderr.contains("reached"), "{r}");
    assert_eq!(env.git_ok(&fresh, &["rev-parse", &chain]), before);
    let v = verify(&env, &fresh, &at);
    assert_eq!(v["stubs"], 2, "{v}");
}

/// A chain commit on `parent` in `dir` whose tree holds `stub.json` = `bytes`,
/// made with stock git's plumbing.
fn plant(env: &Env, dir: &Path, bytes: &[u8], parent: &str) -> String {
    let blob = env.git_input(dir, &["hash-object", "-w", "--stdin"], bytes);
    let tree = env.git_input(
        dir,
        &["mktree"],
        format!("100644 blob {}\tstub.json\n", blob.trim()).as_bytes(),
    );
    env.git_ok(
        dir,
        &["commit-tree", tree.trim(), "-p", parent, "-m", "stub"],
    )
    .trim()
    .to_owned()
}

#[test]
fn a_hostile_or_malformed_stub_is_refused_by_fetch_and_verify_and_shown_escaped() {
    let env = Env::new();
    let daemon = Daemon::start(&env);
    let (bare, url) = served(&env, &daemon, &[]);
    let dev = clone(&env, &url, "dev");
    env.receipt_ok(&dev, &["run", "test"]);
    env.receipt_ok(&dev, &["push"]);
    let writer = env.only_writer(&dev);
    let chain = format!("refs/receipts/{writer}");
    let tip = env.git_ok(&dev, &["rev-parse", &chain]).trim().to_owned();
    let log = env.receipt_ok(&dev, &["log", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&log.stdout).unwrap();
    let id = v[0]["id"].as_str().unwrap().to_owned();

    // a stub on the tip whose check name is a terminal escape: no stub at all
    let stub = |check: &str, seven: char| {
        format!(
            r#"{{"check":"{check}","dropped_at":"2026-12-05T00:00:00Z","format":"git-receipt-stub/1","id":"sha256:{}","index":1,"prev":"{id}","started_at":"2026-12-05T00:00:00Z","subject":"{}"}}"#,
            seven.to_string().repeat(64),
            "1".repeat(40)
        )
    };
    let hostile = stub(r"t\u001b]0;pwned\u0007\u001b[2J", '6');
    let planted = plant(&env, &bare, hostile.as_bytes(), &tip);
    env.git_ok(&bare, &["update-ref", &chain, &planted, &tip]);
    let fresh = clone(&env, &url, "fresh");
    let r = env.receipt(&fresh, &["fetch"]);
    assert!(
        r.stderr
            .contains("stub.json is not a stub: check is not a check name"),
        "{r}"
    );
    assert_eq!(env.git_ok(&fresh, &["rev-parse", &chain]).trim(), tip);
    env.git_ok(
        &fresh,
        &["fetch", "-q", "origin", &format!("+{chain}:{chain}")],
    );
    let r = env.receipt(&fresh, &["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("not a check name"), "{r}");
    let r = env.receipt(&fresh, &["show", &format!("sha256:{}", "6".repeat(8))]);
    assert!(r.stderr.contains("no receipt"), "{r}");
    assert!(
        !r.to_string().contains('\u{1b}') && !r.to_string().contains('\u{7}'),
        "{r:?}"
    );

    // a well-formed stub on the tip: refused as the tip by fetch
    let tipped = plant(&env, &bare, stub("test", '7').as_bytes(), &tip);
    env.git_ok(&bare, &["update-ref", &chain, &tipped, &planted]);
    let r = env.receipt(&fresh, &["fetch"]);
    assert!(r.stderr.contains("retention stub at the tip"), "{r}");
    // in a clone that took it anyway (a plain git fetch), verify says so, and
    // show of its id says what it stands for
    env.git_ok(
        &fresh,
        &["fetch", "-q", "origin", &format!("+{chain}:{chain}")],
    );
    let r = env.receipt(&fresh, &["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("tip is a retention stub"), "{r}");
    let r = env.receipt(&fresh, &["show", &format!("sha256:{}", "7".repeat(8))]);
    assert!(r.stderr.contains("was dropped by retention"), "{r}");
    assert!(r.stderr.contains("#1 of chain"), "{r}");

    // a stub.json that is not canonical, under a real receipt's place
    let loose = stub("test", '8').replacen('{', "{ ", 1);
    let bad = plant(&env, &bare, loose.as_bytes(), &tip);
    env.git_ok(&bare, &["update-ref", &chain, &bad, &tipped]);
    env.git_ok(
        &fresh,
        &["fetch", "-q", "origin", &format!("+{chain}:{chain}")],
    );
    let r = env.receipt(&fresh, &["verify"]);
    assert_eq!(r.code, 1, "{r}");
    assert!(r.stdout.contains("stub.json is not a stub"), "{r}");
}
