//! A fetch derives the notes display of every receipt it takes (issue 30): for
//! many writers it writes their notes objects as one pack, which stock git
//! reads (`git notes show`, `git fsck`), instead of a loose file per object.

use std::path::Path;

use crate::common::{Daemon, Env, clone};

fn count(env: &Env, dir: &Path, field: &str) -> u64 {
    let out = env.git_ok(dir, &["count-objects", "-v"]);
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}: ")))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `n` commits on a new branch `name` of `dir`, each checked by one range run.
fn checked_commits(env: &Env, dir: &Path, name: &str, n: usize) -> String {
    env.git_ok(dir, &["checkout", "-q", "-b", name, "main"]);
    for i in 0..n {
        std::fs::write(dir.join("src/lib.rs"), format!("{name} {i}\n")).unwrap();
        env.git_ok(dir, &["commit", "-qam", &format!("{name} {i}")]);
    }
    env.receipt_ok(dir, &["run", "test", &format!("main..{name}")]);
    env.receipt_ok(dir, &["push"]);
    env.git_ok(dir, &["rev-parse", name]).trim().to_owned()
}

#[test]
fn a_fetch_writes_the_notes_it_derives_for_many_writers_as_one_pack_stock_git_reads() {
    let a = Env::new();
    let b = Env::new();
    let daemon = Daemon::start(&a);
    let seed = a.fixture_repo("make_basic_repo.sh", "seed");
    let (_bare, url) = daemon.bare(&a, "served.git");
    a.git_ok(&seed, &["push", "-q", url.as_str(), "main"]);
    let dir_a = clone(&a, &url, "a");
    let dir_b = clone(&b, &url, "b");
    let tip_a = checked_commits(&a, &dir_a, "wa", 60);
    let tip_b = checked_commits(&b, &dir_b, "wb", 60);
    let (writer_a, writer_b) = (a.only_writer(&dir_a), b.only_writer(&dir_b));

    let fresh = clone(&a, &url, "fresh");
    let packs_before = count(&a, &fresh, "packs");
    let r = a.receipt(&fresh, &["fetch"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stderr.contains("2 chains, 2 with new receipts"), "{r}");
    // the chains came as git's fetch packed them; the notes as one pack more
    assert_eq!(count(&a, &fresh, "count"), 0, "no loose objects");
    assert_eq!(count(&a, &fresh, "packs"), packs_before + 2);
    a.git_ok(&fresh, &["fsck", "--strict", "--no-dangling"]);
    for (writer, tip) in [(&writer_a, &tip_a), (&writer_b, &tip_b)] {
        // the branches were never pushed: their commits are named by the notes
        let note = a.git_ok(
            &fresh,
            &["notes", "--ref", &format!("receipts/{writer}"), "show", tip],
        );
        assert!(note.contains("test passed"), "{note}");
        let lines = a.git_ok(
            &fresh,
            &["notes", "--ref", &format!("receipts/{writer}"), "list"],
        );
        // each receipt on its commit and its inputs tree
        assert_eq!(lines.lines().count(), 120, "{lines}");
    }
    let v = a.receipt_ok(&fresh, &["verify", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    assert_eq!(v["receipts"], 120, "{v}");
    assert_eq!(v["findings"], serde_json::json!([]), "{v}");
    let note_lines = v["note_lines"].clone();
    // nothing new: nothing written
    a.receipt_ok(&fresh, &["fetch"]);
    assert_eq!(count(&a, &fresh, "packs"), packs_before + 2);
    assert_eq!(count(&a, &fresh, "count"), 0);

    // `reindex` rebuilds every writer's notes into one pack too, each a commit
    // on the notes it replaces (nothing lost), with the same tree: these
    // notes were whole
    let notes_of = |writer: &str| format!("refs/notes/receipts/{writer}");
    let before: Vec<String> = [&writer_a, &writer_b]
        .iter()
        .map(|w| {
            a.git_ok(&fresh, &["rev-parse", &notes_of(w)])
                .trim()
                .to_owned()
        })
        .collect();
    let r = a.receipt_ok(&fresh, &["reindex"]);
    assert!(r.stderr.contains("the notes of 2 chains"), "{r}");
    assert_eq!(count(&a, &fresh, "count"), 0, "no loose objects");
    assert_eq!(count(&a, &fresh, "packs"), packs_before + 3);
    a.git_ok(&fresh, &["fsck", "--strict", "--no-dangling"]);
    for (writer, old) in [&writer_a, &writer_b].into_iter().zip(&before) {
        let new = a.git_ok(&fresh, &["rev-parse", &notes_of(writer)]);
        assert_ne!(new.trim(), old, "{writer}: a new notes commit");
        let parent = a.git_ok(&fresh, &["rev-parse", &format!("{}^", notes_of(writer))]);
        assert_eq!(parent.trim(), old, "{writer}: on top of the old notes");
        let trees = a.git_ok(
            &fresh,
            &[
                "rev-parse",
                &format!("{}^{{tree}}", notes_of(writer)),
                &format!("{old}^{{tree}}"),
            ],
        );
        let trees: Vec<&str> = trees.lines().collect();
        assert_eq!(trees[0], trees[1], "{writer}: the same notes");
    }
    let v = a.receipt_ok(&fresh, &["verify", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    assert_eq!(v["findings"], serde_json::json!([]), "{v}");
    assert_eq!(
        v["note_lines"], note_lines,
        "{v}: every note read, as before"
    );
}
