//! `git receipt report` (issue 16): the HTML page for a branchy history with every
//! state in it, read as HTML and rendered by headless Chromium from Debian.
//!
//! The scenario, on `tests/fixtures/make_report_repo.sh` (range main..feature =
//! F3, F2, F1):
//!
//! - `test`: passed on F1, so F2 is stale (src changed) and F3, where it failed,
//!   is failed.
//! - `docs`: passed on F1, then again on F2 with uncommitted changes elsewhere (a
//!   dirty receipt, for the same docs inputs): present on all three, via F2.
//! - `lint`: run only by bob, whose key nobody trusts: missing, one ignored.
//! - `big`: passed on F3 with a 5 MiB log: linked by blob id, never inlined.
//! - `evil`: recorded failed on F3 with a detail and a log that hold HTML.
//!
//! Chromium tests skip with a printed reason when `/usr/bin/chromium` is absent,
//! and fail when `CI` is set: `.ci/run` installs it, so CI never skips.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, Env};

const HOSTILE_DETAIL: &str = r#"<script>alert(1)</script>"><img src=x onerror=alert(2)>"#;
const HOSTILE_LOG: &str =
    "</pre></details><script>alert(5)</script>\"><img src=y onerror=alert(6)>\n";

struct Scenario {
    env: Env,
    repo: PathBuf,
    f1: String,
    f2: String,
    f3: String,
}

fn rev(env: &Env, repo: &Path, r: &str) -> String {
    env.git_ok(repo, &["rev-parse", &format!("{r}^{{commit}}")])
}

fn run(env: &Env, repo: &Path, check: &str, envs: &[(&str, &str)]) {
    let r = env.receipt_with(repo, &["run", check], envs);
    assert!(
        r.stderr.contains("receipt sha256:") || r.stdout.contains("sha256:"),
        "run {check} wrote no receipt: {r}"
    );
}

fn scenario() -> Scenario {
    let env = Env::new();
    let repo = env.fixture_repo("make_report_repo.sh", "repo");
    let (f1, f2, f3) = (
        rev(&env, &repo, "feature~2"),
        rev(&env, &repo, "feature~1"),
        rev(&env, &repo, "feature"),
    );
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    run(&env, &repo, "test", &[]);
    env.git_ok(&repo, &["checkout", "-q", &f1]);
    run(&env, &repo, "test", &[]);
    run(&env, &repo, "docs", &[]);
    env.git_ok(&repo, &["checkout", "-q", &f2]);
    // a dirty run: uncommitted changes outside the docs check's inputs
    std::fs::write(repo.join("src/main.rs"), "fn main() { dirty() }\n").unwrap();
    run(&env, &repo, "docs", &[]);
    env.git_ok(&repo, &["checkout", "-q", "--", "src"]);
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    run(&env, &repo, "test", &[("TEST_EXIT", "1")]);
    run(&env, &repo, "big", &[]);
    let log = env.path("hostile.log");
    std::fs::write(&log, HOSTILE_LOG).unwrap();
    env.receipt_ok(
        &repo,
        &[
            "record",
            "evil",
            "--exit-code",
            "1",
            "--duration-ms",
            "1500",
            "--detail",
            HOSTILE_DETAIL,
            "--log",
            log.to_str().unwrap(),
        ],
    );
    // bob's key is trusted by nobody here
    let bob = Env::new();
    run(&bob, &repo, "lint", &[]);
    Scenario {
        env,
        repo,
        f1,
        f2,
        f3,
    }
}

/// `report main..feature -o page.html`: the page's text.
fn report(s: &Scenario, extra: &[&str]) -> String {
    let out = s.env.path("page.html");
    let mut args = vec!["report", "main..feature", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let r = s.env.receipt(&s.repo, &args);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("wrote ") && r.stderr.contains("Not accepted"),
        "{r}"
    );
    std::fs::read_to_string(out).unwrap()
}

/// The class of the matrix cell of `check` in the row of `commit`, in `html`
/// (as written, or as Chromium serialises the DOM: attributes keep their order).
fn cell(html: &str, commit: &str, check: &str) -> String {
    let row_start = html
        .find(&format!("<code>{}</code>", &commit[..7]))
        .unwrap_or_else(|| panic!("no row for {commit}"));
    let row = &html[row_start..];
    let row = &row[..row.find("</tr>").expect("row ends")];
    let at = row
        .find(&format!("data-check=\"{check}\""))
        .unwrap_or_else(|| panic!("no {check} cell in row {commit}: {row}"));
    let td = row[..at].rfind("<td").expect("a cell");
    let cell = &row[td..];
    let class = cell
        .split("class=\"")
        .nth(1)
        .and_then(|c| c.split('"').next())
        .unwrap_or("");
    let text_end = cell.find("</td>").unwrap_or(cell.len());
    format!("{class} | {}", &cell[..text_end])
}

fn assert_cell(html: &str, commit: &str, check: &str, state: &str) -> String {
    let c = cell(html, commit, check);
    assert!(
        c.starts_with(&format!("s-{state} |")),
        "{check} at {}: expected {state}, got {c}",
        &commit[..7]
    );
    // the state is in words too, never colour alone
    assert!(c.contains(state), "{c}");
    c
}

fn assert_matrix(html: &str, s: &Scenario) {
    assert_cell(html, &s.f1, "test", "present");
    assert_cell(html, &s.f2, "test", "stale");
    assert_cell(html, &s.f3, "test", "failed");
    // the dirty receipt on F2 decides docs on all three commits
    let f2 = &s.f2[..7];
    assert_cell(html, &s.f2, "docs", "present");
    assert!(assert_cell(html, &s.f1, "docs", "present").contains(&format!("via {f2}")));
    assert!(assert_cell(html, &s.f3, "docs", "present").contains(&format!("via {f2}")));
    let lint = assert_cell(html, &s.f3, "lint", "missing");
    assert!(
        lint.contains("1 receipt by untrusted keys ignored"),
        "{lint}"
    );
    assert_cell(html, &s.f1, "lint", "missing");
    assert_cell(html, &s.f3, "big", "present");
    assert_cell(html, &s.f3, "evil", "failed");
}

#[test]
fn the_page_shows_every_state_with_its_evidence() {
    let s = scenario();
    let html = report(&s, &[]);
    assert!(
        html.contains(
            "<p class=\"verdict no\" role=\"status\">✗ Not accepted: 1 of 1 required check not present</p>"
        ),
        "{html}"
    );
    assert_matrix(&html, &s);
    // one row per commit of the range, in the order stock `git log` lists them
    let listed = s
        .env
        .git_ok(&s.repo, &["log", "--format=%H", "main..feature"]);
    let listed: Vec<&str> = listed.lines().collect();
    assert_eq!(listed.len(), 3, "{listed:?}");
    let rows: Vec<usize> = listed
        .iter()
        .map(|c| html.find(&format!("<code>{}</code> ", &c[..7])).unwrap())
        .collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "{rows:?}");
    // evidence: the dirty receipt says so, with signer fingerprint and trust
    assert!(
        html.contains("dirty: uncommitted changes were tested"),
        "{html}"
    );
    assert!(html.contains("clean: the committed tree"));
    let fingerprint = s
        .env
        .receipt_ok(&s.repo, &["key", "show", "--fingerprint"])
        .stdout;
    let fingerprint = fingerprint.trim();
    assert!(
        fingerprint.starts_with("SHA256:") && html.contains(fingerprint),
        "{fingerprint}"
    );
    assert!(html.contains("verified: signed by a trusted key (your key)"));
    assert!(html.contains("<dt>inputs</dt><dd><code>src</code> (tree"));
    assert!(html.contains(
        "<dt>command</dt><dd><code>sh -c &#39;echo tests-ran; exit ${TEST_EXIT:-0}&#39;</code>"
    ));
    // history: test ran on main's tip (B), F1 and F3 on F3's first-parent line
    let test_plot = html
        .split("<figure><figcaption><b>test</b>: ")
        .nth(1)
        .expect("a plot for test");
    assert!(
        test_plot.starts_with("3 runs, 1 failed;"),
        "{}",
        &test_plot[..200]
    );
}

#[test]
fn a_large_log_is_linked_by_blob_id_not_inlined() {
    let s = scenario();
    let html = report(&s, &[]);
    let log = s
        .env
        .git_ok(&s.repo, &["log", "-1", "--format=%H"])
        .to_owned();
    assert_eq!(log, s.f3);
    let big = html
        .split("<b>big</b> <code>sha256:")
        .nth(1)
        .expect("evidence for big");
    let big = &big[..big.find("</article>").unwrap()];
    assert!(
        big.contains("5.0 MiB, over the 256.0 KiB this page inlines")
            && big.contains("git receipt show --log sha256:"),
        "{big}"
    );
    assert!(!big.contains("<details>"), "{big}");
    assert!(
        html.len() < 200 * 1024,
        "the page is {} bytes: the 5 MiB log was inlined",
        html.len()
    );
    // small logs are inlined behind a disclosure
    assert!(html.contains("<details><summary>Full log (10 bytes, blob"));
}

#[test]
fn receipt_strings_that_hold_html_render_as_text() {
    let s = scenario();
    let html = report(&s, &[]);
    assert!(
        !html.contains("<script") && !html.contains("<img"),
        "{html}"
    );
    // the detail in the verdict list, the evidence and a cell's title; the log and
    // the commit subject in the evidence and the matrix
    assert!(html.contains(
        "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"
    ));
    assert!(html.contains("&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;alert(5)&lt;/script&gt;"));
    assert!(html.contains(
        "readme: &quot;&gt;&lt;img src=x onerror=alert(3)&gt; &lt;script&gt;alert(4)&lt;/script&gt;"
    ));
}

#[test]
fn the_page_names_no_external_url() {
    let s = scenario();
    let html = report(&s, &["--verify"]);
    assert!(!html.contains("://"), "a URL with a scheme");
    assert!(!html.contains("url(") && !html.contains("@import"));
    assert!(!html.contains(" src=\""), "an element that loads something");
    for (i, _) in html.match_indices("href=\"") {
        assert!(
            html[i + 6..].starts_with('#'),
            "a link that leaves the page: {}",
            &html[i..i + 60]
        );
    }
    assert!(html.contains("default-src 'none'"), "the CSP forbids loads");
    // --verify adds the summary
    assert!(
        html.contains("<section id=\"verify\"><h2>Verification</h2><p class=\"verdict yes\">✓ Every chain and note is valid</p>"),
        "{html}"
    );
}

#[test]
fn a_single_revision_is_a_one_row_page_on_standard_output() {
    let s = scenario();
    let out = s.env.receipt(&s.repo, &["report", "feature~1"]);
    assert_eq!(out.code, 0, "{out}");
    let html = &out.stdout;
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<th class=\"c\" scope=\"row\">").count(), 1);
    assert_cell(html, &s.f2, "test", "stale");
    assert!(html.contains(&format!("At <code>feature~1 ({})</code>", &s.f2[..7])));
    let bad = s.env.receipt(&s.repo, &["report", "no-such-rev"]);
    assert_eq!(bad.code, 2, "{bad}");
}

// ------------------------------------------------------------ headless Chromium

/// Debian's Chromium, or `None` when it is not installed (a panic under `CI`).
fn chromium() -> Option<PathBuf> {
    let path = "/usr/bin/chromium";
    common::require_tool(path, "apt-get install chromium").then(|| PathBuf::from(path))
}

/// Run headless Chromium on `url` with `extra` arguments; stdout on success.
fn headless(chromium: &Path, env: &Env, extra: &[String], url: &str) -> String {
    let profile = tempfile::tempdir_in(env.tmp.path()).unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .env("HOME", &env.home)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn file_url(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// Width and height of a PNG, from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn chromium_renders_the_states_and_no_markup_from_receipts() {
    let Some(chromium) = chromium() else { return };
    let s = scenario();
    report(&s, &[]);
    let page = s.env.path("page.html");
    let dom = headless(&chromium, &s.env, &["--dump-dom".into()], &file_url(&page));
    assert!(
        dom.contains("✗ Not accepted: 1 of 1 required check not present"),
        "{dom}"
    );
    assert_matrix(&dom, &s);
    // what a receipt holds is text in the DOM, never an element
    assert!(!dom.contains("<script") && !dom.contains("<img"), "{dom}");
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
}

/// The URLs of the requests a page made while Chromium loaded it, from Chromium's
/// own network log (the browser's background requests have no page origin).
fn page_requests(chromium: &Path, env: &Env, page: &Path) -> Vec<String> {
    let log = env.path("net.json");
    headless(
        chromium,
        env,
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", log.display()),
        ],
        &file_url(page),
    );
    let net: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&log).unwrap()).expect("a JSON net log");
    let start_job = net["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    assert!(start_job.is_number(), "the net log names its event types");
    net["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == start_job && e["params"]["url"].is_string())
        .filter(|e| e["params"]["initiator"] != "not an origin")
        .map(|e| e["params"]["url"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn chromium_loading_the_page_makes_no_request() {
    let Some(chromium) = chromium() else { return };
    let s = scenario();
    report(&s, &["--verify"]);
    // the detector sees a request when a page makes one
    let control = s.env.path("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><p>control</p><img src=\"http://127.0.0.1:9/probe.png\">",
    )
    .unwrap();
    let seen = page_requests(&chromium, &s.env, &control);
    assert!(
        seen.iter().any(|u| u.contains("127.0.0.1:9/probe.png")),
        "the net log shows no request from the control page: {seen:?}"
    );
    let made = page_requests(&chromium, &s.env, &s.env.path("page.html"));
    assert!(made.is_empty(), "the report made requests: {made:?}");
}

/// A copy of the page inside an iframe `width` px wide, with a test-only script
/// that writes the document's scroll width and client width into the DOM (the
/// shipped page has no script, and its CSP would refuse one).
fn width_probe(html: &str, width: u32) -> String {
    let srcdoc = html.replace('&', "&amp;").replace('"', "&quot;");
    format!(
        "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" style=\"border:0;width:{width}px;height:900px\" srcdoc=\"{srcdoc}\"></iframe>\
         <script>const f=document.getElementById('f');function m(){{const d=f.contentDocument;const td=d.querySelector('.matrix td');\
         document.body.setAttribute('data-probe',d.documentElement.scrollWidth+' '+d.documentElement.clientWidth+' '+(td?getComputedStyle(td).display:'none'))}}\
         f.addEventListener('load',m);if(f.contentDocument&&f.contentDocument.readyState==='complete')m();</script></body></html>"
    )
}

#[test]
fn the_page_fits_1280_and_390_pixels_and_screenshots_are_taken() {
    let Some(chromium) = chromium() else { return };
    let s = scenario();
    let html = report(&s, &[]);
    let page = s.env.path("page.html");
    for (width, matrix_display) in [(1280u32, "table-cell"), (390, "inline-block")] {
        let shot = s.env.path(&format!("shot-{width}.png"));
        headless(
            &chromium,
            &s.env,
            &[
                format!("--window-size={width},2400"),
                format!("--screenshot={}", shot.display()),
            ],
            &file_url(&page),
        );
        let png = std::fs::read(&shot).expect("a screenshot");
        assert_eq!(png_size(&png).0, width, "screenshot width");
        assert!(
            png.len() > 10_000,
            "a blank screenshot? {} bytes",
            png.len()
        );

        let probe = s.env.path(&format!("probe-{width}.html"));
        std::fs::write(&probe, width_probe(&html, width)).unwrap();
        let dom = headless(&chromium, &s.env, &["--dump-dom".into()], &file_url(&probe));
        let measured = dom
            .split("data-probe=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| {
                panic!("the probe measured nothing: {}", &dom[..dom.len().min(500)])
            });
        let parts: Vec<&str> = measured.split(' ').collect();
        let (scroll, client): (u32, u32) = (parts[0].parse().unwrap(), parts[1].parse().unwrap());
        assert!(
            client <= width && client + 20 >= width,
            "the viewport is {client} px, not about {width}: {measured}"
        );
        assert!(
            scroll <= client,
            "at {width} px the page is {scroll} px wide: it overflows the viewport"
        );
        assert_eq!(parts[2], matrix_display, "matrix layout at {width} px");
    }
}

#[test]
fn the_verdict_is_the_one_gate_gives() {
    let s = scenario();
    let gate = s.env.receipt(&s.repo, &["gate", "feature"]);
    assert_eq!(gate.code, 1, "{gate}");
    assert!(report(&s, &[]).contains("<p class=\"verdict no\""));
    // the failing check passes on the tip: gate says yes, and so does the page
    run(&s.env, &s.repo, "test", &[]);
    let gate = s.env.receipt(&s.repo, &["gate", "feature"]);
    assert_eq!(gate.code, 0, "{gate}");
    let out = s.env.path("page.html");
    let r = s.env.receipt(
        &s.repo,
        &["report", "main..feature", "-o", out.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr
            .contains("✓ Accepted: the required check is present"),
        "{r}"
    );
    let html = std::fs::read_to_string(out).unwrap();
    assert!(html.contains(
        "<p class=\"verdict yes\" role=\"status\">✓ Accepted: the required check is present</p>"
    ));
    assert_cell(&html, &s.f3, "test", "present");
    // --trust takes the signers at that revision, as gate --trust does: main names
    // none, so nothing counts and the page says not accepted with gate
    let gate = s
        .env
        .receipt(&s.repo, &["gate", "feature", "--trust", "main"]);
    assert_eq!(gate.code, 1, "{gate}");
    let html = report(&s, &["--trust", "main"]);
    assert_cell(&html, &s.f3, "test", "missing");
    assert!(
        html.contains("trust: signers of .gitreceipts at main"),
        "{html}"
    );
}

/// Assert that every cell of `html` holds the state `status SPEC --json` gives;
/// returns how many cells were compared.
fn assert_cells_are_status(env: &Env, repo: &Path, html: &str, spec: &str) -> usize {
    let r = env.receipt_ok(repo, &["status", spec, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let mut cells = 0;
    for commit in v["commits"].as_array().unwrap() {
        let hex = commit["commit"].as_str().unwrap();
        for check in commit["checks"].as_array().unwrap() {
            let name = check["name"].as_str().unwrap();
            let state = check["state"].as_str().unwrap();
            assert_cell(html, hex, name, state);
            cells += 1;
        }
    }
    cells
}

#[test]
fn every_cell_is_the_state_status_gives() {
    let s = scenario();
    let html = report(&s, &[]);
    assert_eq!(
        assert_cells_are_status(&s.env, &s.repo, &html, "main..feature"),
        15,
        "3 commits, 5 checks"
    );
}

#[test]
fn commits_after_a_merge_from_main_are_judged_by_the_newer_merge_base() {
    let env = Env::new();
    let repo = env.fixture_repo("make_report_repo.sh", "repo");
    let bob = Env::new();
    bob.receipt_ok(&repo, &["key", "generate"]);
    let bob_key = bob.receipt_ok(&repo, &["key", "show"]).stdout;
    // main trusts bob from now on; feature forked before that, then merges main
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!("[signer \"bob\"]\n\tkey = {}\n", bob_key.trim()));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "trust bob"]);
    env.git_ok(&repo, &["checkout", "-q", "feature"]);
    run(&bob, &repo, "test", &[]); // on F3: bob is not trusted there
    env.git_ok(&repo, &["merge", "-q", "--no-edit", "main"]);
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() { 3 }\n").unwrap();
    env.git_ok(&repo, &["commit", "-qam", "after the merge"]);
    run(&bob, &repo, "test", &[]); // on the tip: bob is trusted there
    let out = env.path("page.html");
    let r = env.receipt(
        &repo,
        &["report", "main..feature", "-o", out.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{r}");
    let html = std::fs::read_to_string(&out).unwrap();
    let tip = rev(&env, &repo, "feature");
    let f3 = rev(&env, &repo, "feature^1^1");
    let test_at_f3 = assert_cell(&html, &f3, "test", "missing");
    assert!(
        test_at_f3.contains("1 receipt by untrusted keys ignored"),
        "{test_at_f3}"
    );
    assert_cell(&html, &tip, "test", "present");
    assert_eq!(
        assert_cells_are_status(&env, &repo, &html, "main..feature"),
        25,
        "5 commits (F1, F2, F3, the merge, the tip), 5 checks"
    );
}

#[test]
fn a_review_approval_renders_as_a_review_not_as_a_failed_check() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str("[review \"code\"]\n\tpath = src\n\trequired = 1\n\tself-approve = true\n");
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "declare the review"]);
    env.receipt_ok(&repo, &["run", "test"]);
    env.receipt_ok(
        &repo,
        &["review", "HEAD", "--approve", "-m", "<b>looks</b> good"],
    );
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    let out = env.receipt(&repo, &["report", "HEAD"]);
    assert_eq!(out.code, 0, "{out}");
    let html = &out.stdout;
    let hex: String = id.trim_start_matches("sha256:").chars().take(16).collect();
    let start = html
        .find(&format!("<article class=\"ev\" id=\"r-{hex}\""))
        .unwrap_or_else(|| panic!("an evidence article for the review {id}: {html}"));
    let article = &html[start..];
    let article = &article[..article.find("</article>").expect("it ends")];
    for needle in [
        "✓ approved",
        "review code",
        "approved by",
        "<code>src</code>",
        "&lt;b&gt;looks&lt;/b&gt; good",
    ] {
        assert!(article.contains(needle), "{needle:?} in {article}");
    }
    for wrong in [
        "failed",
        "exit code",
        "the whole tree",
        "<dt>command</dt>",
        "<dt>duration</dt>",
    ] {
        assert!(!article.contains(wrong), "no {wrong:?} in {article}");
    }
    // the matrix cell says who approved it, with no duration
    let cell_at = html
        .find("data-check=\"review:code\"")
        .expect("a review:code cell");
    let cell = &html[cell_at..];
    let cell = &cell[..cell.find("</td>").unwrap()];
    assert!(cell.contains("approved by"), "{cell}");
    assert!(!cell.contains("0ms"), "{cell}");
}
