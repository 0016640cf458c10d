//! Per-test results at the size of a large suite (issue 28), each against its
//! baseline measured in the same run, alternating:
//!
//! 1. `git receipt run with` against `git receipt run plain`: both checks run the
//!    same command (sleep SECONDS, then write a 10,000-test JUnit file with one
//!    failure); only `with` declares `results = junit:...`, so the difference is
//!    reading, parsing, sorting, canonicalizing and signing the list, and writing
//!    it beside the log. Target: at most 5% more wall time at SECONDS = 10.
//! 2. `gate --require diff` against `gate --require plain` on a topic branch whose
//!    commit fails the same one test main fails: `diff` is `parity =
//!    differential`, so its gate reads the topic's 10,000-test list and main's
//!    (both beside their logs, as lists of more than 1,000 tests are), evaluates
//!    the check at the merge base and compares; `plain` is absolute and passed,
//!    so its gate reads neither. Target: within 2x.
//!
//! The repository is built here with plain git and the real binary: refs and
//! objects loose, no commit-graph, nothing packed, as after a day of work. Whole
//! processes are timed, as a hook runs them. Prints medians and ratios as a
//! markdown table; asserts the answers (the receipts hold 10,000 tests, the
//! differential gate passes by comparison), never a time.
//!
//! Usage: cargo bench --bench results [-- SECONDS ROUNDS GATES]
//! (defaults 10, 3 and 30; `-- 1 3 30` for a quick look)

mod support;

use std::path::Path;

use support::{git, median, median_ms, receipt_command, timed_ms};

const TESTS: usize = 10_000;

/// `git receipt args`, without the machine's git config.
fn receipt(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    receipt_command(dir, home, args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git-receipt")
}

fn ok(dir: &Path, home: &Path, args: &[&str]) -> String {
    let out = receipt(dir, home, args);
    assert!(
        out.status.success(),
        "git receipt {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn main() {
    let args: Vec<f64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seconds = args.first().copied().unwrap_or(10.0);
    let rounds = args.get(1).map_or(3, |r| *r as usize).max(1);
    let gates = args.get(2).map_or(30, |g| *g as usize).max(1);

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let repo = tmp.path().join("repo");
    git(
        tmp.path(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    git(&repo, &["config", "user.name", "Bench"]);
    git(&repo, &["config", "user.email", "bench@example.org"]);
    git(&repo, &["config", "gc.auto", "0"]);
    // `suite.sh` sleeps, then writes TESTS test cases to out/junit.xml, failing
    // the one named in `failing`
    std::fs::write(repo.join(".gitignore"), "out/\n").unwrap();
    std::fs::write(
        repo.join("suite.sh"),
        format!(
            "sleep \"$1\"\nmkdir -p out\nawk -v f=\"$(cat failing)\" 'BEGIN {{ print \"<testsuites><testsuite name=\\\"big\\\">\";\n  for (i = 0; i < {TESTS}; i++) {{ n = sprintf(\"t%05d\", i);\n    if (n == f) printf \"<testcase classname=\\\"big\\\" name=\\\"%s\\\" time=\\\"0.001\\\"><failure>no</failure></testcase>\\n\", n;\n    else printf \"<testcase classname=\\\"big\\\" name=\\\"%s\\\" time=\\\"0.001\\\"/>\\n\", n }}\n  print \"</testsuite></testsuites>\" }}' > out/junit.xml\n[ -z \"$(cat failing)\" ]\n"
        ),
    )
    .unwrap();
    std::fs::write(repo.join("failing"), "").unwrap();
    let contract = format!(
        "[check \"plain\"]\n\trun = sh suite.sh {seconds}\n\tpath = suite.sh\n\tpath = failing\n\
         [check \"with\"]\n\trun = sh suite.sh {seconds}\n\tpath = suite.sh\n\tpath = failing\n\tresults = junit:out/junit.xml\n\
         [check \"diff\"]\n\trun = sh suite.sh 0\n\tpath = suite.sh\n\tpath = failing\n\tresults = junit:out/junit.xml\n\tparity = differential\n\
         [check \"gate-plain\"]\n\trun = sh suite.sh 0\n\tpath = suite.sh\n\tresults = junit:out/junit.xml\n"
    );
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "suite"]);
    ok(&repo, &home, &["init"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);

    // 1. run with and without results, alternating, on the same commit
    let (mut plain, mut with) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let one = |name: &str| timed_ms(|| drop(ok(&repo, &home, &["run", name])));
        if r % 2 == 0 {
            plain.push(one("plain"));
            with.push(one("with"));
        } else {
            with.push(one("with"));
            plain.push(one("plain"));
        }
    }
    let shown = ok(&repo, &home, &["show", "--json"]);
    assert!(
        shown.contains(&format!("\"total\":{TESTS}"))
            || shown.contains(&format!("\"total\": {TESTS}")),
        "the receipt of `with` holds {TESTS} tests"
    );

    // 2. main fails t00042 (the baseline); a topic commit fails the same
    std::fs::write(repo.join("failing"), "t00042").unwrap();
    git(&repo, &["commit", "-q", "-am", "main fails t00042"]);
    let failed = receipt(&repo, &home, &["run", "diff"]);
    assert_eq!(failed.status.code(), Some(1), "main fails t00042");
    git(&repo, &["checkout", "-q", "-b", "topic"]);
    std::fs::write(
        repo.join("suite.sh"),
        std::fs::read_to_string(repo.join("suite.sh")).unwrap() + "# topic\n",
    )
    .unwrap();
    git(&repo, &["commit", "-q", "-am", "topic"]);
    assert_eq!(
        receipt(&repo, &home, &["run", "diff"]).status.code(),
        Some(1)
    );
    // the absolute check passes on the topic (its inputs leave `failing` out)
    std::fs::write(repo.join("failing"), "").unwrap();
    ok(&repo, &home, &["run", "gate-plain"]);
    git(&repo, &["checkout", "-q", "failing"]);
    let said = ok(&repo, &home, &["gate", "--require", "diff"]);
    assert!(
        said.contains("present"),
        "the differential gate passes by comparison: {said}"
    );
    let loose = git(&repo, &["count-objects"]);
    let mut t_plain = Vec::new();
    let mut t_diff = Vec::new();
    for i in 0..gates {
        let plain = || drop(ok(&repo, &home, &["gate", "--require", "gate-plain"]));
        let diff = || drop(ok(&repo, &home, &["gate", "--require", "diff"]));
        if i % 2 == 0 {
            t_plain.push(median_ms(1, plain));
            t_diff.push(median_ms(1, diff));
        } else {
            t_diff.push(median_ms(1, diff));
            t_plain.push(median_ms(1, plain));
        }
    }

    let (p, w) = (median(plain), median(with));
    let (gp, gd) = (median(t_plain), median(t_diff));
    println!("state: {loose} (refs and objects loose, no commit-graph)");
    println!();
    println!("| case | git-receipt | baseline | ratio | target |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| `run` of a {seconds} s check writing {TESTS} tests, with `results =` vs without | {w:.0} ms | {p:.0} ms | {:.3}x | 1.05x |",
        w / p
    );
    println!(
        "| `gate` of a differential check against a {TESTS}-test baseline vs an absolute one | {gd:.1} ms | {gp:.1} ms | {:.2}x | 2x |",
        gd / gp
    );
    println!();
    println!("({rounds} runs each, alternating; {gates} gates each, alternating; medians)");
}
