//! Keys held by ssh-agent: a real `ssh-agent` started by each test (and killed when
//! it ends), keys added with the real `ssh-add`, receipts checked by
//! `git receipt verify` and by `ssh-keygen -Y verify`, and stock git signing a
//! commit with the same `user.signingKey` that git-receipt reuses.
//!
//! Without `ssh-agent`/`ssh-add` on PATH the tests skip with a printed reason, or
//! fail when `CI` is set: `.ci/run` installs them (Debian's openssh-client).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{self, Env, Run};
use base64::Engine as _;
use git_receipt::sign::{PublicKey, SigningKey};

/// A running `ssh-agent` on a socket of its own; killed on drop.
struct Agent {
    socket: PathBuf,
    pid: String,
}

impl Agent {
    /// Start an agent, or `None` (with the reason printed; a panic under `CI`) when
    /// OpenSSH's agent tools are not installed.
    fn start(env: &Env) -> Option<Agent> {
        for tool in ["ssh-agent", "ssh-add"] {
            if !common::require_tool(tool, "apt-get install openssh-client") {
                return None;
            }
        }
        let socket = env.path("agent.sock");
        let mut cmd = Command::new("ssh-agent");
        env.seal(&mut cmd);
        // Without -D the agent forks after binding the socket, so the socket is
        // there when this returns; the `-s` output names its pid.
        let out = cmd.arg("-s").arg("-a").arg(&socket).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "ssh-agent: {stdout}");
        let pid = stdout
            .split(';')
            .find_map(|part| part.trim().strip_prefix("SSH_AGENT_PID="))
            .unwrap_or_else(|| panic!("no SSH_AGENT_PID in {stdout:?}"))
            .to_owned();
        assert!(socket.exists(), "the agent listens on {}", socket.display());
        Some(Agent { socket, pid })
    }

    fn sock(&self) -> &str {
        self.socket.to_str().unwrap()
    }

    /// `ssh-add [args] FILE` against this agent; `passphrase` is given through
    /// SSH_ASKPASS, as a desktop would.
    fn add(&self, env: &Env, key: &Path, passphrase: Option<&str>) {
        let mut cmd = Command::new("ssh-add");
        env.seal(&mut cmd);
        cmd.env("SSH_AUTH_SOCK", &self.socket).arg("-q").arg(key);
        if let Some(passphrase) = passphrase {
            let askpass = env.path("askpass.sh");
            std::fs::write(&askpass, format!("#!/bin/sh\necho '{passphrase}'\n")).unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
            cmd.env("SSH_ASKPASS", &askpass)
                .env("SSH_ASKPASS_REQUIRE", "force")
                .env("DISPLAY", ":0");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "ssh-add {}: {}",
            key.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Move the private key `key` into this agent (the file is removed: whatever
    /// signs from now on, it is not git-receipt's process) and point `repo`'s
    /// receipt.signingKey at its public key file, which it returns.
    fn take_over(&self, env: &Env, repo: &Path, key: &Path) -> PathBuf {
        self.add(env, key, None);
        std::fs::remove_file(key).unwrap();
        let pub_file = pub_path(key);
        env.git_ok(
            repo,
            &["config", "receipt.signingKey", pub_file.to_str().unwrap()],
        );
        pub_file
    }

    /// What `ssh-add -L` lists.
    fn listed(&self, env: &Env) -> String {
        let mut cmd = Command::new("ssh-add");
        env.seal(&mut cmd);
        let out = cmd
            .env("SSH_AUTH_SOCK", &self.socket)
            .arg("-L")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = Command::new("ssh-agent")
            .arg("-k")
            .env("SSH_AGENT_PID", &self.pid)
            .env("SSH_AUTH_SOCK", &self.socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// `ssh-keygen -q -t <kind> -N <passphrase> -f <path>`; returns the path.
fn ssh_keygen(env: &Env, path: &Path, kind: &str, passphrase: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut cmd = Command::new("ssh-keygen");
    env.seal(&mut cmd);
    let out = cmd
        .args([
            "-q",
            "-t",
            kind,
            "-N",
            passphrase,
            "-C",
            "dev@example.org",
            "-f",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path.to_owned()
}

fn pub_path(key: &Path) -> PathBuf {
    PathBuf::from(format!("{}.pub", key.display()))
}

fn public_of(key: &Path) -> PublicKey {
    PublicKey::from_openssh(&std::fs::read_to_string(pub_path(key)).unwrap()).unwrap()
}

/// Everything under refs/receipts and refs/notes/receipts.
fn receipt_refs(env: &Env, repo: &Path) -> String {
    env.git_ok(
        repo,
        &["for-each-ref", "refs/receipts/", "refs/notes/receipts/"],
    )
}

/// `ssh-keygen -Y verify` of receipt `id` against `public` (the OpenSSH oracle).
fn ssh_keygen_verifies(env: &Env, repo: &Path, id: &str, public: &PublicKey) -> Run {
    let body = env.receipt_ok(repo, &["show", "--body", id]).raw_stdout;
    let sig = env.receipt_ok(repo, &["show", "--sshsig", id]).stdout;
    let allowed = env.path("allowed_signers");
    std::fs::write(
        &allowed,
        format!("dev namespaces=\"git-receipt\" {}\n", public.to_openssh()),
    )
    .unwrap();
    let sig_file = env.path("receipt.sig");
    std::fs::write(&sig_file, sig).unwrap();
    common::to_run(env.ssh_keygen_verify(&allowed, "dev", "git-receipt", &sig_file, &body))
}

#[test]
fn a_public_key_in_receipt_signing_key_signs_through_the_agent_like_the_file_would() {
    let env = Env::new();
    let Some(agent) = Agent::start(&env) else {
        return;
    };
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.path("keys/id_ed25519"), "ed25519", "");
    let in_process = SigningKey::load(&key).unwrap();
    let public = public_of(&key);
    let pub_file = agent.take_over(&env, &repo, &key);
    let sock = [("SSH_AUTH_SOCK", agent.sock())];

    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 0, "{r}");
    assert!(r.stdout.contains("tests-ran"), "{r}");
    assert!(
        !env.home.join(".config/git-receipt").exists(),
        "no default key was made: {r}"
    );

    // the writer and signer derive from the public key, as for a key file
    let receipt = &env.log_json(&repo)[0];
    assert_eq!(
        receipt["signer"],
        public.fingerprint().as_str(),
        "{receipt}"
    );
    assert_eq!(
        env.only_writer(&repo),
        git_receipt::receipt::writer_id(&public, "default")
    );

    // byte-identical signed data: Ed25519 is deterministic, so the agent's signature
    // equals the one the same key makes in-process over the same body
    let id = receipt["id"].as_str().unwrap().to_owned();
    let body = env.receipt_ok(&repo, &["show", "--body", &id]).raw_stdout;
    let tip = env.git_ok(
        &repo,
        &[
            "rev-parse",
            &format!("refs/receipts/{}", env.only_writer(&repo)),
        ],
    );
    let stored: serde_json::Value =
        serde_json::from_slice(&env.receipt_bytes(&repo, tip.trim())).unwrap();
    let stored_sig = base64::engine::general_purpose::STANDARD
        .decode(stored["signature"]["sig"].as_str().unwrap())
        .unwrap();
    assert_eq!(stored_sig, in_process.sign(&body).unwrap().to_vec());

    // git-receipt and OpenSSH both accept it
    let v = env.receipt_with(&repo, &["verify"], &sock);
    assert_eq!(v.code, 0, "{v}");
    let v = env.receipt(&repo, &["verify"]);
    assert_eq!(v.code, 0, "verifying needs no agent: {v}");
    let oracle = ssh_keygen_verifies(&env, &repo, &id, &public);
    assert_eq!(oracle.code, 0, "ssh-keygen -Y verify: {oracle}");
    assert!(
        oracle
            .stdout
            .contains("Good \"git-receipt\" signature for dev"),
        "{oracle}"
    );

    // `key show` and `doctor` say where the key is and how it signs
    let show = env.receipt_with(&repo, &["key", "show"], &sock);
    assert_eq!(show.code, 0, "{show}");
    assert_eq!(show.stdout.trim_end(), public.to_openssh(), "{show}");
    assert!(
        show.stderr.contains(&format!(
            "signs through ssh-agent at {} (SSH_AUTH_SOCK), key {} (from git config receipt.signingKey)",
            agent.sock(),
            pub_file.display()
        )),
        "{show}"
    );
    let doctor = env.receipt_with(&repo, &["doctor", "--json"], &sock);
    let items: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
    let signing = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["item"] == "signing")
        .unwrap_or_else(|| panic!("a signing item: {doctor}"));
    assert_eq!(signing["ok"], true, "{doctor}");
    assert!(
        signing["detail"].as_str().unwrap().contains("ssh-agent"),
        "{doctor}"
    );
}

#[test]
fn a_literal_public_key_and_git_key_prefix_sign_through_the_agent() {
    let env = Env::new();
    let Some(agent) = Agent::start(&env) else {
        return;
    };
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.path("keys/id"), "ed25519", "");
    agent.add(&env, &key, None);
    let public = public_of(&key);
    std::fs::remove_file(&key).unwrap();
    let sock = [("SSH_AUTH_SOCK", agent.sock())];
    for (i, value) in [
        format!("key::{} dev@example.org", public.to_openssh()),
        public.to_openssh(),
    ]
    .iter()
    .enumerate()
    {
        env.git_ok(&repo, &["config", "receipt.signingKey", value]);
        let r = env.receipt_with(&repo, &["run", "test"], &sock);
        assert_eq!(r.code, 0, "{value}: {r}");
        let log = env.log_json(&repo);
        assert_eq!(log.len(), i + 1);
        assert_eq!(log[0]["signer"], public.fingerprint().as_str());
    }
    let show = env.receipt_with(&repo, &["key", "show"], &sock);
    assert!(
        show.stderr
            .contains("key the public key in git config receipt.signingKey"),
        "{show}"
    );
}

#[test]
fn an_agent_that_lacks_the_key_is_named_with_the_fingerprint_and_ssh_add() {
    let env = Env::new();
    let Some(agent) = Agent::start(&env) else {
        return;
    };
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.path("keys/id_ed25519"), "ed25519", "");
    // the agent holds another key, not this one
    let other = ssh_keygen(&env, &env.path("keys/other"), "ed25519", "");
    agent.add(&env, &other, None);
    let fingerprint = public_of(&key).fingerprint();
    let pub_file = pub_path(&key);
    // the private key elsewhere (beside the .pub file, it would sign itself)
    let stash = env.path("stash/id_ed25519");
    std::fs::create_dir_all(stash.parent().unwrap()).unwrap();
    std::fs::rename(&key, &stash).unwrap();
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", pub_file.to_str().unwrap()],
    );
    let sock = [("SSH_AUTH_SOCK", agent.sock())];

    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 2, "{r}");
    for needle in [
        format!(
            "ssh-agent at {} does not hold the signing key {fingerprint}",
            agent.sock()
        ),
        format!("hint: add it with `ssh-add {}`", key.display()),
        "(the key path comes from git config receipt.signingKey)".to_owned(),
    ] {
        assert!(r.stderr.contains(&needle), "stderr has {needle:?}: {r}");
    }
    assert!(
        !r.stdout.contains("tests-ran"),
        "the check did not run: {r}"
    );
    assert_eq!(receipt_refs(&env, &repo), "", "nothing written: {r}");

    // doctor turns it into a line to fix; `key show` still prints the key
    let doctor = env.receipt_with(&repo, &["doctor", "--offline"], &sock);
    assert_eq!(doctor.code, 1, "{doctor}");
    assert!(
        doctor.stdout.contains("signing    FIX   ssh-agent at"),
        "{doctor}"
    );
    assert!(
        doctor
            .stdout
            .contains(&format!("run: add it with `ssh-add {}`", key.display())),
        "{doctor}"
    );
    let show = env.receipt_with(&repo, &["key", "show", "--fingerprint"], &sock);
    assert_eq!(show.code, 0, "{show}");
    assert_eq!(show.stdout.trim_end(), fingerprint);
    assert!(show.stderr.contains("cannot sign now"), "{show}");

    // after `ssh-add` it signs
    agent.add(&env, &stash, None);
    assert!(agent.listed(&env).contains(&public_of(&key).to_openssh()));
    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 0, "{r}");
}

#[test]
fn no_agent_and_an_unreachable_agent_are_told_apart() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.path("keys/id_ed25519"), "ed25519", "");
    let pub_file = pub_path(&key);
    // the private key elsewhere (beside the .pub file, it would sign itself)
    std::fs::remove_file(&key).unwrap();
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", pub_file.to_str().unwrap()],
    );
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("SSH_AUTH_SOCK is not set"), "{r}");
    assert!(r.stderr.contains("eval \"$(ssh-agent)\""), "{r}");
    assert!(
        r.stderr.contains(&format!("ssh-add {}", key.display())),
        "{r}"
    );

    let gone = env.path("no-agent.sock");
    let r = env.receipt_with(
        &repo,
        &["run", "test"],
        &[("SSH_AUTH_SOCK", gone.to_str().unwrap())],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "cannot reach ssh-agent at {} (SSH_AUTH_SOCK)",
            gone.display()
        )),
        "{r}"
    );
    assert!(r.stderr.contains("ssh-add -l"), "{r}");
    assert!(!r.stdout.contains("tests-ran"), "{r}");
    assert_eq!(receipt_refs(&env, &repo), "");
}

/// An `sk-ssh-ed25519@openssh.com` public key line for `key` (made by hand: making
/// a real one needs a FIDO token).
fn security_key_line(key: &[u8; 32]) -> String {
    let mut blob = Vec::new();
    for field in [&b"sk-ssh-ed25519@openssh.com"[..], key, b"ssh:"] {
        blob.extend_from_slice(&(field.len() as u32).to_be_bytes());
        blob.extend_from_slice(field);
    }
    format!(
        "sk-ssh-ed25519@openssh.com {} dev@token",
        base64::engine::general_purpose::STANDARD.encode(blob)
    )
}

#[test]
fn a_fido_key_is_not_supported_yet_and_other_types_are_refused() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let line = security_key_line(SigningKey::from_seed(&[3; 32]).public().as_bytes());
    // as a literal, and as a .pub file (where a token's key usually is)
    let sk_pub = env.path("keys/id_ed25519_sk.pub");
    std::fs::create_dir_all(sk_pub.parent().unwrap()).unwrap();
    std::fs::write(&sk_pub, format!("{line}\n")).unwrap();
    for value in [format!("key::{line}"), sk_pub.display().to_string()] {
        env.git_ok(&repo, &["config", "receipt.signingKey", &value]);
        let r = env.receipt_with(
            &repo,
            &["run", "test"],
            &[("SSH_AUTH_SOCK", "/nonexistent")],
        );
        assert_eq!(r.code, 2, "{r}");
        assert!(
            r.stderr
                .contains("security-key (FIDO) key of type sk-ssh-ed25519@openssh.com"),
            "{r}"
        );
        assert!(r.stderr.contains("does not support yet"), "{r}");
        assert!(!r.stdout.contains("tests-ran"), "{r}");
    }
    // an ECDSA public key is refused as not Ed25519, before any agent is asked
    let ecdsa = ssh_keygen(&env, &env.path("keys/id_ecdsa"), "ecdsa", "");
    let ecdsa_pub = pub_path(&ecdsa);
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", ecdsa_pub.to_str().unwrap()],
    );
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(
        r.stderr.contains(&format!(
            "key {} has type ecdsa-sha2-nistp256, but receipts are signed with Ed25519 keys only",
            ecdsa_pub.display()
        )),
        "{r}"
    );
    assert_eq!(receipt_refs(&env, &repo), "");
}

#[test]
fn git_s_ssh_signing_key_is_reused_when_nothing_else_is_configured() {
    let env = Env::new();
    let Some(agent) = Agent::start(&env) else {
        return;
    };
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.home.join(".ssh/id_ed25519"), "ed25519", "");
    agent.add(&env, &key, None);
    let public = public_of(&key);
    let sock = [("SSH_AUTH_SOCK", agent.sock())];

    // user.signingKey alone (gpg.format is openpgp) is git's GPG key: not used
    env.git_ok(
        &repo,
        &[
            "config",
            "--global",
            "user.signingKey",
            "~/.ssh/id_ed25519.pub",
        ],
    );
    let r = env.receipt_with(&repo, &["key", "show", "--fingerprint"], &sock);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("no signing key at"), "{r}");

    // with gpg.format=ssh, as git itself signs
    env.git_ok(&repo, &["config", "--global", "gpg.format", "ssh"]);
    // stock git needs the agent too: give it the socket the way a shell would
    let mut git = Command::new("git");
    env.seal(&mut git);
    let out = git
        .current_dir(&repo)
        .env("SSH_AUTH_SOCK", agent.sock())
        .args(["commit", "-q", "-S", "--allow-empty", "-m", "signed by git"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git commit -S through the agent: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        env.log_json(&repo)[0]["signer"],
        public.fingerprint().as_str()
    );
    assert!(
        !env.home.join(".config/git-receipt").exists(),
        "no default key was made: {r}"
    );
    let show = env.receipt_with(&repo, &["key", "show"], &sock);
    assert!(
        show.stderr.contains(&format!(
            "{} (from git config user.signingKey (gpg.format=ssh))",
            pub_path(&key).display()
        )),
        "{show}"
    );
    // a receipt.signingKey still wins over git's key
    let own = ssh_keygen(&env, &env.path("keys/receipts"), "ed25519", "");
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", own.to_str().unwrap()],
    );
    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 0, "{r}");
    assert_eq!(
        env.log_json(&repo)[0]["signer"],
        public_of(&own).fingerprint().as_str()
    );
}

#[test]
fn a_passphrase_protected_key_signs_through_the_agent_that_unlocked_it() {
    let env = Env::new();
    let Some(agent) = Agent::start(&env) else {
        return;
    };
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.path("keys/locked"), "ed25519", "correct horse");
    let k = key.to_str().unwrap();
    env.git_ok(&repo, &["config", "receipt.signingKey", k]);

    // no agent: the old refusal, now also pointing at ssh-add
    let r = env.receipt(&repo, &["run", "test"]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("is passphrase-protected"), "{r}");
    assert!(r.stderr.contains(&format!("ssh-add {k}")), "{r}");
    // an agent without it: named by fingerprint
    let sock = [("SSH_AUTH_SOCK", agent.sock())];
    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("does not hold the signing key"), "{r}");
    assert!(r.stderr.contains(&format!("ssh-add {k}`")), "{r}");

    agent.add(&env, &key, Some("correct horse"));
    let r = env.receipt_with(&repo, &["run", "test"], &sock);
    assert_eq!(r.code, 0, "{r}");
    let public = public_of(&key);
    assert_eq!(
        env.log_json(&repo)[0]["signer"],
        public.fingerprint().as_str()
    );
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    let oracle = ssh_keygen_verifies(&env, &repo, &id, &public);
    assert_eq!(oracle.code, 0, "ssh-keygen -Y verify: {oracle}");
    assert!(!r.stderr.contains("correct horse"), "{r}");
}

#[test]
fn export_in_toto_signs_through_the_agent_the_same_envelopes_as_the_key_file() {
    let env = Env::new();
    let Some(agent) = Agent::start(&env) else {
        return;
    };
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    let key = ssh_keygen(&env, &env.path("keys/id_ed25519"), "ed25519", "");
    env.git_ok(
        &repo,
        &["config", "receipt.signingKey", key.to_str().unwrap()],
    );
    env.receipt_ok(&repo, &["run", "test"]);
    let from_file = env.receipt_ok(&repo, &["export", "--in-toto"]);
    assert_eq!(from_file.stdout.lines().count(), 1, "{from_file}");

    agent.take_over(&env, &repo, &key);
    let sock = [("SSH_AUTH_SOCK", agent.sock())];
    let through_agent = env.receipt_with(&repo, &["export", "--in-toto"], &sock);
    assert_eq!(through_agent.code, 0, "{through_agent}");
    // Ed25519 is deterministic: the agent's DSSE signature is the file key's
    assert_eq!(through_agent.stdout, from_file.stdout);

    // an agent without the key: a clear error, and nothing half-written
    let elsewhere = Env::new();
    let other = Agent::start(&elsewhere).expect("a second agent");
    let r = env.receipt_with(
        &repo,
        &["export", "--in-toto"],
        &[("SSH_AUTH_SOCK", other.sock())],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stdout.is_empty(), "{r}");
    assert!(r.stderr.contains("does not hold the signing key"), "{r}");
}
