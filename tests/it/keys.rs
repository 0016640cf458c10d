//! The signing key: created on first use, found through GIT_RECEIPT_SIGNING_KEY,
//! `receipt.signingKey` and XDG_CONFIG_HOME, refused with a clear message when it
//! is missing, encrypted or not Ed25519, and never leaked anywhere.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Env, Run};

/// `ssh-keygen -q -t <kind> -N <passphrase> -f <path>`; returns the path.
fn ssh_keygen(path: &Path, kind: &str, passphrase: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let out = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            kind,
            "-N",
            passphrase,
            "-C",
            "test@example.org",
            "-f",
        ])
        .arg(path)
        .output()
        .expect("ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path.to_owned()
}

/// The SHA256 fingerprint `ssh-keygen -lf` prints (second field).
fn ssh_fingerprint(key: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(key)
        .output()
        .expect("ssh-keygen -lf");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned()
}

fn pub_path(key: &Path) -> PathBuf {
    PathBuf::from(format!("{}.pub", key.display()))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn default_key(env: &Env) -> PathBuf {
    env.home.join(".config/git-receipt/signing_key")
}

/// The signer of the newest receipt, as `log --json` reports it.
fn newest_signer(env: &Env, repo: &Path) -> String {
    env.log_json(repo)[0]["signer"].as_str().unwrap().to_owned()
}

/// Nothing was written under refs/receipts or refs/notes.
fn assert_nothing_written(env: &Env, repo: &Path) {
    assert_eq!(
        env.git_ok(
            repo,
            &["for-each-ref", "refs/receipts/", "refs/notes/receipts/"]
        ),
        "",
        "nothing written"
    );
}

#[test]
fn first_run_creates_the_default_key_once_with_private_modes() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = default_key(&env);
    assert!(!key.exists());
    let r = env.receipt_ok(&repo, &["run", "test"]);
    assert!(key.is_file() && pub_path(&key).is_file(), "{r}");
    assert_eq!(mode(&key), 0o600, "private key is 0600");
    assert_eq!(mode(key.parent().unwrap()), 0o700, "its directory is 0700");
    let public = std::fs::read_to_string(pub_path(&key)).unwrap();
    assert!(public.starts_with("ssh-ed25519 AAAA"), "{public}");
    assert_eq!(
        r.stderr.matches("created a new signing key").count(),
        1,
        "{r}"
    );
    assert!(r.stderr.contains(&key.display().to_string()), "{r}");
    assert!(
        r.stderr.contains(&ssh_fingerprint(&key)),
        "the notice gives the fingerprint: {r}"
    );
    // said once: later runs and reads are quiet about it
    for args in [&["run", "test"][..], &["show"], &["log"], &["key", "show"]] {
        let again = env.receipt_ok(&repo, args);
        assert!(
            !again.stderr.contains("created a new signing key"),
            "{again}"
        );
    }
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&key));
}

#[test]
fn key_show_matches_the_pub_file_and_ssh_keygen() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let key = default_key(&env);
    let r = env.receipt_ok(&repo, &["key", "show"]);
    let public = std::fs::read_to_string(pub_path(&key)).unwrap();
    let fields: Vec<&str> = public.split_whitespace().collect();
    assert_eq!(
        r.stdout.trim_end(),
        format!("{} {}", fields[0], fields[1]),
        "key show prints the .pub line's key: {r}"
    );
    assert!(r.stdout.starts_with("ssh-ed25519 "), "{r}");
    let r = env.receipt_ok(&repo, &["key", "show", "--fingerprint"]);
    assert_eq!(r.stdout.trim_end(), ssh_fingerprint(&pub_path(&key)));
    // outside a repository too (no repository config to read)
    let r = env.receipt_ok(env.tmp.path(), &["key", "show", "--fingerprint"]);
    assert_eq!(r.stdout.trim_end(), ssh_fingerprint(&pub_path(&key)));
}

#[test]
fn key_generate_creates_once_and_refuses_to_overwrite() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = default_key(&env);
    let r = env.receipt_ok(&repo, &["key", "generate"]);
    assert!(key.is_file(), "{r}");
    assert_eq!(mode(&key), 0o600);
    assert_eq!(
        r.stdout.trim_end(),
        env.receipt_ok(&repo, &["key", "show"]).stdout.trim_end()
    );
    let before = std::fs::read(&key).unwrap();
    let before_pub = std::fs::read(pub_path(&key)).unwrap();
    let r = env.receipt(&repo, &["key", "generate"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "a key already exists at {}; not overwriting it",
            key.display()
        )),
        "{r}"
    );
    assert_eq!(std::fs::read(&key).unwrap(), before);
    assert_eq!(std::fs::read(pub_path(&key)).unwrap(), before_pub);
    // a run afterwards uses that key, without announcing a new one
    let r = env.receipt_ok(&repo, &["run", "test"]);
    assert!(!r.stderr.contains("created a new signing key"), "{r}");
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&key));
}

#[test]
fn xdg_config_home_is_honoured() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let xdg = env.path("xdg");
    let xdg_s = xdg.to_str().unwrap();
    let r = env.receipt_with(&repo, &["run", "test"], &[("XDG_CONFIG_HOME", xdg_s)]);
    assert_eq!(r.code, 0, "{r}");
    let key = xdg.join("git-receipt/signing_key");
    assert!(key.is_file(), "{r}");
    assert!(r.stderr.contains(&key.display().to_string()), "{r}");
    assert!(
        !env.home.join(".config/git-receipt").exists(),
        "nothing under ~/.config"
    );
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&key));
    let r = env.receipt_with(
        &repo,
        &["key", "show", "--fingerprint"],
        &[("XDG_CONFIG_HOME", xdg_s)],
    );
    assert_eq!(r.stdout.trim_end(), ssh_fingerprint(&key), "{r}");
    // an empty XDG_CONFIG_HOME is unset, as the XDG spec says
    let r = env.receipt_with(&repo, &["key", "show"], &[("XDG_CONFIG_HOME", "")]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&default_key(&env).display().to_string()),
        "{r}"
    );
}

#[test]
fn a_key_named_by_the_environment_is_used() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env.path("keys/ci_key"), "ed25519", "");
    let r = env.receipt_with(
        &repo,
        &["run", "test"],
        &[("GIT_RECEIPT_SIGNING_KEY", key.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("created a new signing key"), "{r}");
    assert!(!default_key(&env).exists(), "no default key created");
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&key));
    let r = env.receipt_with(
        &repo,
        &["key", "show", "--fingerprint"],
        &[("GIT_RECEIPT_SIGNING_KEY", key.to_str().unwrap())],
    );
    assert_eq!(r.stdout.trim_end(), ssh_fingerprint(&key), "{r}");
    // the writer id is derived from that key
    let writer = env.only_writer(&repo);
    assert!(writer.starts_with("default-"), "{writer}");
}

#[test]
fn a_key_named_by_git_config_is_used_with_tilde_expanded_and_the_environment_wins() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let config_key = ssh_keygen(&env.home.join(".ssh/id_ed25519"), "ed25519", "");
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", "~/.ssh/id_ed25519"],
    );
    let r = env.receipt_ok(&repo, &["run", "test"]);
    assert!(!r.stderr.contains("created a new signing key"), "{r}");
    assert!(!default_key(&env).exists(), "no default key created");
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&config_key));

    let env_key = ssh_keygen(&env.path("keys/env_key"), "ed25519", "");
    assert_ne!(ssh_fingerprint(&env_key), ssh_fingerprint(&config_key));
    let r = env.receipt_with(
        &repo,
        &["run", "test"],
        &[("GIT_RECEIPT_SIGNING_KEY", env_key.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&env_key));
    // two keys, two writers; each receipt verifies only against its own signer
    let writers = env.git_ok(
        &repo,
        &["for-each-ref", "--format=%(refname)", "refs/receipts/"],
    );
    assert_eq!(writers.lines().count(), 2, "{writers}");
    let log = env.log_json(&repo);
    let writer_of = |key: &Path| -> String {
        let fp = ssh_fingerprint(key);
        let w: Vec<&str> = log
            .iter()
            .filter(|r| r["signer"] == fp.as_str())
            .map(|r| r["writer"].as_str().unwrap())
            .collect();
        assert_eq!(w.len(), 1, "one receipt signed by {fp}");
        w[0].to_owned()
    };
    for (trusted, other) in [(&config_key, &env_key), (&env_key, &config_key)] {
        let allowed = env.path("allowed_signers");
        let public = std::fs::read_to_string(trusted.with_extension("pub")).unwrap();
        std::fs::write(&allowed, format!("me namespaces=\"git-receipt\" {public}")).unwrap();
        let r = env.receipt(
            &repo,
            &[
                "verify",
                "--strict",
                "--json",
                "--allowed-signers",
                allowed.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 1, "the other signer's receipt is not verified: {r}");
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let flagged: Vec<(&str, &str)> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["chain"].as_str().unwrap(), f["kind"].as_str().unwrap()))
            .collect();
        assert_eq!(
            flagged,
            [(writer_of(other).as_str(), "untrusted")],
            "only {other:?}'s receipt fails against {trusted:?}: {r}"
        );
    }
    // an empty variable does not count as set
    let r = env.receipt_with(
        &repo,
        &["key", "show", "--fingerprint"],
        &[("GIT_RECEIPT_SIGNING_KEY", "")],
    );
    assert_eq!(r.stdout.trim_end(), ssh_fingerprint(&config_key), "{r}");
}

fn assert_refused(env: &Env, repo: &Path, r: &Run, needles: &[&str]) {
    assert_eq!(r.code, 2, "{r}");
    for n in needles {
        assert!(r.stderr.contains(n), "stderr names {n:?}: {r}");
    }
    assert!(
        !r.stdout.contains("tests-ran"),
        "the check does not run without a key: {r}"
    );
    assert!(
        !env.home.join(".config/git-receipt").exists(),
        "no default key created: {r}"
    );
    assert!(!r.stderr.contains("created a new signing key"), "{r}");
    assert_nothing_written(env, repo);
}

#[test]
fn a_missing_key_named_by_the_environment_is_an_error_not_a_new_key() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let missing = env.path("keys/nope");
    let m = missing.to_str().unwrap();
    for args in [
        &["run", "test"][..],
        &["record", "test", "--exit-code", "0"],
    ] {
        let r = env.receipt_with(&repo, args, &[("GIT_RECEIPT_SIGNING_KEY", m)]);
        assert_refused(
            &env,
            &repo,
            &r,
            &[
                &format!("signing key {m} does not exist"),
                "(the key path comes from GIT_RECEIPT_SIGNING_KEY)",
                "ssh-keygen -t ed25519",
            ],
        );
    }
    let r = env.receipt_with(&repo, &["key", "show"], &[("GIT_RECEIPT_SIGNING_KEY", m)]);
    assert_refused(&env, &repo, &r, &[m, "GIT_RECEIPT_SIGNING_KEY"]);
}

#[test]
fn a_missing_key_named_by_git_config_is_an_error_not_a_new_key() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", "~/.ssh/missing_key"],
    );
    let expanded = env.home.join(".ssh/missing_key");
    let e = expanded.to_str().unwrap();
    let r = env.receipt(&repo, &["run", "test"]);
    assert_refused(
        &env,
        &repo,
        &r,
        &[
            &format!("signing key {e} does not exist"),
            "(the key path comes from git config receipt.signingKey)",
        ],
    );
    let r = env.receipt(&repo, &["key", "show", "--fingerprint"]);
    assert_refused(&env, &repo, &r, &[e, "git config receipt.signingKey"]);
}

#[test]
fn an_encrypted_key_is_refused_with_how_to_fix_it() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env.path("keys/locked"), "ed25519", "secret");
    let k = key.to_str().unwrap();
    let r = env.receipt_with(&repo, &["run", "test"], &[("GIT_RECEIPT_SIGNING_KEY", k)]);
    assert_refused(
        &env,
        &repo,
        &r,
        &[
            &format!("signing key {k} is passphrase-protected"),
            "ssh-keygen -p -N ''",
            "(the key path comes from GIT_RECEIPT_SIGNING_KEY)",
        ],
    );
    assert!(!r.stderr.contains("secret"), "{r}");
}

#[test]
fn an_ecdsa_key_is_refused_as_not_ed25519() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env.home.join(".ssh/id_ecdsa"), "ecdsa", "");
    env.git_ok(&repo, &["config", "receipt.signingKey", "~/.ssh/id_ecdsa"]);
    let r = env.receipt(&repo, &["run", "test"]);
    assert_refused(
        &env,
        &repo,
        &r,
        &[
            &format!("key {} has type ecdsa-sha2-nistp256", key.display()),
            "Ed25519 keys only",
            "ssh-keygen -t ed25519",
            "(the key path comes from git config receipt.signingKey)",
        ],
    );
}

/// Every place the private key could leak to, after many commands (good and bad).
#[test]
fn the_private_key_never_appears_in_output_objects_or_logs() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mut runs: Vec<Run> = Vec::new();
    let mut go = |args: &[&str], envs: &[(&str, &str)]| {
        let r = env.receipt_with(&repo, args, envs);
        runs.push(r);
        runs.last().unwrap().code
    };
    assert_eq!(go(&["run", "test"], &[]), 0);
    let key = default_key(&env);
    let key_text = std::fs::read_to_string(&key).unwrap();

    // bad copies of the key: truncated, corrupted, the public half, a directory
    let lines: Vec<&str> = key_text.lines().collect();
    let truncated = env.path("bad/truncated");
    std::fs::create_dir_all(truncated.parent().unwrap()).unwrap();
    std::fs::write(
        &truncated,
        format!(
            "{}\n{}\n",
            lines[..lines.len() - 2].join("\n"),
            lines[lines.len() - 1]
        ),
    )
    .unwrap();
    let corrupted = env.path("bad/corrupted");
    let mut bytes = key_text.clone().into_bytes();
    let mid = key_text.find('\n').unwrap() + 150;
    bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
    std::fs::write(&corrupted, &bytes).unwrap();
    let as_private = pub_path(&key);

    assert_eq!(go(&["run", "test"], &[]), 0);
    assert_eq!(
        go(&["run", "lint", "--", "sh", "-c", "echo no; exit 3"], &[]),
        3
    );
    assert_eq!(go(&["run", "ghost", "--", "/nonexistent/tool"], &[]), 127);
    let log_file = env.path("out.txt");
    std::fs::write(&log_file, "recorded output\n").unwrap();
    let lf = log_file.to_str().unwrap();
    assert_eq!(
        go(&["record", "test", "--exit-code", "1", "--log", lf], &[]),
        0
    );
    for bad in [&truncated, &corrupted, &env.path("bad")] {
        let b = bad.to_str().unwrap();
        assert_eq!(
            go(&["run", "test"], &[("GIT_RECEIPT_SIGNING_KEY", b)]),
            2,
            "{b}"
        );
        assert_eq!(
            go(&["key", "show"], &[("GIT_RECEIPT_SIGNING_KEY", b)]),
            2,
            "{b}"
        );
    }
    // the public half, with the private key beside it, signs with that key (as
    // `ssh-keygen -Y sign` does), and `key show` prints the public key
    let p = as_private.to_str().unwrap();
    assert_eq!(go(&["run", "test"], &[("GIT_RECEIPT_SIGNING_KEY", p)]), 0);
    assert_eq!(go(&["key", "show"], &[("GIT_RECEIPT_SIGNING_KEY", p)]), 0);
    assert_eq!(go(&["key", "generate"], &[]), 2);
    assert_eq!(go(&["key", "show"], &[]), 0);
    assert_eq!(go(&["key", "show", "--fingerprint"], &[]), 0);
    assert_eq!(go(&["show"], &[]), 0);
    assert_eq!(go(&["show", "--json"], &[]), 0);
    assert_eq!(go(&["log"], &[]), 0);
    assert_eq!(go(&["log", "--json"], &[]), 0);
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(go(&["show", "--body", &id], &[]), 0);
    assert_eq!(go(&["show", "--sshsig", &id], &[]), 0);
    // a check that fails to store (bad chain name) after the key was loaded
    env.git_ok(&repo, &["config", "receipt.chain", "Not Valid"]);
    assert_eq!(go(&["run", "test"], &[]), 2);
    env.git_ok(&repo, &["config", "--unset", "receipt.chain"]);

    // what to look for: each base64 line of the key file, and the seed
    let seed = ssh_key::PrivateKey::from_openssh(&key_text)
        .unwrap()
        .key_data()
        .ed25519()
        .unwrap()
        .private
        .to_bytes();
    let mut needles: Vec<Vec<u8>> = key_text
        .lines()
        .filter(|l| !l.starts_with("-----") && !l.is_empty())
        .map(|l| l.as_bytes().to_vec())
        .collect();
    assert!(needles.len() >= 4, "{key_text}");
    needles.push(hex::encode(seed).into_bytes());
    needles.push(hex::encode_upper(seed).into_bytes());
    needles.push(seed.to_vec());
    {
        use base64::Engine;
        needles.push(
            base64::engine::general_purpose::STANDARD
                .encode(seed)
                .into_bytes(),
        );
    }

    // where to look: every output, every object, the logs the receipts point to
    let mut haystacks: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        haystacks.push((format!("stdout of run {i}"), r.raw_stdout.clone()));
        haystacks.push((format!("stderr of run {i}"), r.stderr.clone().into_bytes()));
    }
    let mut cat = Command::new("git");
    env.seal(&mut cat);
    let all = cat
        .current_dir(&repo)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    assert!(all.status.success());
    haystacks.push(("every git object".into(), all.stdout));
    // the receipts and notes are among those objects
    let reachable = env.git_ok(
        &repo,
        &[
            "rev-list",
            "--objects",
            "--glob=refs/receipts/*",
            "--glob=refs/notes/*",
            "--glob=refs/receipt-logs/*",
        ],
    );
    assert!(reachable.lines().count() > 10, "{reachable}");
    for v in env.log_json(&repo) {
        let Some(blob) = v["log"].as_str() else {
            continue;
        };
        let log = env.git(&repo, &["cat-file", "blob", blob]);
        assert_eq!(log.code, 0, "the log {blob} is kept: {log}");
        haystacks.push((format!("log {blob}"), log.raw_stdout));
    }
    for entry in walk(&repo.join(".git/logs")) {
        haystacks.push((entry.display().to_string(), std::fs::read(&entry).unwrap()));
    }
    assert!(haystacks.len() > 40);
    // controls: the seed really is this key, and the scan really sees the outputs
    let public_line = git_receipt::sign::SigningKey::from_seed(&seed)
        .public()
        .to_openssh();
    let public_b64 = public_line.split(' ').nth(1).unwrap().as_bytes();
    assert!(
        haystacks
            .iter()
            .any(|(_, h)| h.windows(public_b64.len()).any(|w| w == public_b64)),
        "the public key ({public_line}) is found, so the private one would be"
    );
    for (name, hay) in &haystacks {
        for needle in &needles {
            assert!(
                !hay.windows(needle.len()).any(|w| w == needle.as_slice()),
                "private key material {:?} found in {name}",
                String::from_utf8_lossy(needle)
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// An `ssh-ed25519` key line whose 32 bytes are the small-order identity point:
/// well formed, but no usable key.
fn identity_key_line() -> String {
    use base64::Engine as _;
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let mut blob = Vec::new();
    for part in [&b"ssh-ed25519"[..], &identity] {
        blob.extend_from_slice(&(part.len() as u32).to_be_bytes());
        blob.extend_from_slice(part);
    }
    format!(
        "ssh-ed25519 {}",
        base64::engine::general_purpose::STANDARD.encode(&blob)
    )
}

/// A `[signer]` line whose 32 bytes are no usable Ed25519 point (here the
/// small-order identity) is checked when a receipt first claims it, not when the
/// contract is read: the other signers' receipts still decide, that key verifies
/// nothing, and `verify --trust` names it.
#[test]
fn a_signer_key_that_is_no_point_signs_nothing_and_verify_names_it() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let mine = env.receipt_ok(&repo, &["key", "generate"]).stdout;
    let bogus = identity_key_line();
    let mut contract = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    contract.push_str(&format!(
        "[signer \"me\"]\n\tkey = {}\n[signer \"broken\"]\n\tkey = {bogus}\n",
        mine.trim()
    ));
    std::fs::write(repo.join(".gitreceipts"), contract).unwrap();
    env.git_ok(
        &repo,
        &["commit", "-qam", "a broken signer beside a good one"],
    );
    env.receipt_ok(&repo, &["run", "test"]);
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "the good signer's receipt decides: {r}");
    let r = env.receipt(&repo, &["verify", "--trust", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("signer \"broken\"") && r.stderr.contains("no receipt can verify"),
        "{r}"
    );
    // the key itself is refused where it is taken as one's own
    let out = env.path("bogus.pub");
    std::fs::write(&out, format!("{bogus}\n")).unwrap();
    let r = env.receipt_with(
        &repo,
        &["key", "show"],
        &[("GIT_RECEIPT_SIGNING_KEY", out.to_str().unwrap())],
    );
    assert_ne!(r.code, 0, "not a usable key: {r}");
}

/// A team's `.gitreceipts` of a thousand signers: the one key that signed decides,
/// wherever it sits among them; without it nothing does; and a key that is no
/// point among the thousand is named exactly as beside a single good signer.
#[test]
fn among_a_thousand_signers_the_one_that_signed_decides_and_a_broken_one_is_named() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let ci = ssh_keygen(&env.path("keys/ci"), "ed25519", "");
    let ci_public = std::fs::read_to_string(pub_path(&ci)).unwrap();
    let bogus = identity_key_line();
    let other = |i: u64| {
        let mut seed = [9u8; 32];
        seed[..8].copy_from_slice(&i.to_le_bytes());
        git_receipt::sign::SigningKey::from_seed(&seed)
            .public()
            .to_openssh()
    };
    let base = std::fs::read_to_string(repo.join(".gitreceipts")).unwrap();
    let contract = |ci_key: &str| {
        let mut c = base.clone();
        for i in 0..1000u64 {
            let (name, key) = match i {
                333 => ("broken".to_owned(), bogus.clone()),
                617 => ("ci".to_owned(), ci_key.trim().to_owned()),
                _ => (format!("w{i}"), other(i)),
            };
            c.push_str(&format!("[signer \"{name}\"]\n\tkey = {key}\n"));
        }
        c
    };
    std::fs::write(repo.join(".gitreceipts"), contract(&ci_public)).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "a thousand signers"]);
    let as_ci = [("GIT_RECEIPT_SIGNING_KEY", ci.to_str().unwrap())];
    let r = env.receipt_with(&repo, &["run", "test"], &as_ci);
    assert_eq!(r.code, 0, "{r}");
    // judged with a key of one's own that is none of the thousand
    env.receipt_ok(&repo, &["key", "generate"]);
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 0, "ci's receipt decides: {r}");
    let r = env.receipt(&repo, &["verify", "--trust", "HEAD"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains("signer \"broken\"") && r.stderr.contains("no receipt can verify"),
        "{r}"
    );
    assert_eq!(
        r.stderr.matches("no receipt can verify").count(),
        1,
        "only the broken key is named: {r}"
    );
    // a failing run by ci: the gate's row names its receipt by ci's [signer] name
    let r = env.receipt_with(&repo, &["record", "test", "--exit-code", "1"], &as_ci);
    assert_eq!(r.code, 0, "{r}");
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "ci's newer receipt failed: {r}");
    assert!(r.stdout.contains(" by ci #"), "{r}");
    // the same thousand with ci's key swapped for another: its receipts count no more
    std::fs::write(repo.join(".gitreceipts"), contract(&other(5000))).unwrap();
    env.git_ok(&repo, &["commit", "-qam", "ci is no signer"]);
    let r = env.receipt(&repo, &["gate", "HEAD"]);
    assert_eq!(r.code, 1, "nobody trusted signed: {r}");
    let r = env.receipt(&repo, &["status", "--json", "HEAD"]);
    assert!(
        r.stdout.contains(r#""untrusted_receipts": 1"#)
            || r.stdout.contains(r#""untrusted_receipts": 2"#),
        "{r}"
    );
    assert!(!r.stdout.contains(r#""state": "failed""#), "{r}");
}

#[test]
fn user_signing_key_naming_a_pub_file_signs_with_the_private_key_beside_it_as_ssh_keygen_does() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env.home.join(".ssh/id_ed25519"), "ed25519", "");
    // git's usual SSH signing set-up, and no ssh-agent (the sealed env has none)
    env.git_ok(&repo, &["config", "--global", "gpg.format", "ssh"]);
    env.git_ok(
        &repo,
        &[
            "config",
            "--global",
            "user.signingKey",
            "~/.ssh/id_ed25519.pub",
        ],
    );
    // the oracle: stock git signs with it, no agent needed
    env.git_ok(
        &repo,
        &["commit", "-q", "-S", "--allow-empty", "-m", "signed by git"],
    );
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(!r.stderr.contains("ssh-agent"), "{r}");
    assert!(!r.stderr.contains("SSH_AUTH_SOCK"), "{r}");
    assert!(
        !r.stderr.contains("readable by others"),
        "a .pub file is meant to be readable: {r}"
    );
    assert_eq!(newest_signer(&env, &repo), ssh_fingerprint(&key));
    assert!(!default_key(&env).exists(), "no default key created");
    let show = env.receipt_ok(&repo, &["key", "show"]);
    assert!(
        show.stderr.contains(&format!(
            "signs in-process with the private key {} beside",
            key.display()
        )),
        "{show}"
    );
    // the private key open to others is warned about, as a named private key is
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 0, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "the signing key {} is readable by others",
            key.display()
        )),
        "{r}"
    );
    // with no private key beside it, the agent is asked, as before
    std::fs::remove_file(&key).unwrap();
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("SSH_AUTH_SOCK is not set"), "{r}");
}
