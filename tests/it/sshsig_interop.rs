//! Interoperability of `git_receipt::sign` with the real OpenSSH `ssh-keygen`.
//!
//! These tests require `ssh-keygen` on PATH and FAIL (rather than skip) without it.
//! Every `ssh-keygen` run gets a throwaway HOME and no agent, so the real `~/.ssh` is
//! never read or written.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use git_receipt::sign::{
    KeyError, NAMESPACE, PublicKey, SigningKey, armor_sshsig, verify, verify_raw_strict,
};

/// A scratch directory that doubles as HOME for ssh-keygen.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("create a temporary directory"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Run `ssh-keygen args...` in the sandbox, feeding `stdin`.
    fn ssh_keygen(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = Command::new("ssh-keygen")
            .args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("SSH_AGENT_PID")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot run `ssh-keygen` ({err}): these interop tests need the OpenSSH \
                     client tools on PATH (e.g. `apt-get install openssh-client`); they \
                     deliberately fail instead of skipping"
                )
            });
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(stdin)
            .expect("write ssh-keygen's stdin");
        child.wait_with_output().expect("wait for ssh-keygen")
    }

    /// Run ssh-keygen and insist on success.
    fn ssh_keygen_ok(&self, args: &[&str], stdin: &[u8]) -> String {
        let output = self.ssh_keygen(args, stdin);
        assert!(
            output.status.success(),
            "`ssh-keygen {}` failed with {}:\nstdout: {}\nstderr: {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("ssh-keygen prints UTF-8")
    }

    /// `ssh-keygen -t <type> -N <passphrase> -f <name>` plus `extra` arguments.
    fn keygen(&self, name: &str, key_type: &str, passphrase: &str, extra: &[&str]) -> PathBuf {
        let mut args = vec!["-q", "-t", key_type, "-N", passphrase, "-C", "test@sandbox"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-f", name]);
        self.ssh_keygen_ok(&args, b"");
        self.path(name)
    }
}

/// The first `n` whitespace-separated fields of `line`, joined by single spaces.
fn fields(line: &str, n: usize) -> String {
    line.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path)
        .unwrap_or_else(|err| panic!("stat {}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// The base64 body lines of a PEM file (what must never appear in error output).
fn pem_body_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .expect("read key file")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("-----"))
        .map(str::to_owned)
        .collect()
}

/// Assert that neither Display nor Debug of `err` leaks any part of the key body.
fn assert_no_key_material(err: &KeyError, key_file: &Path) {
    let shown = format!("{err}\n{err:?}");
    let body = pem_body_lines(key_file);
    assert!(!body.is_empty());
    for line in &body {
        // Every body line is 70 base64 characters except maybe the last; a 16-character
        // window of any of them is enough to call it a leak.
        for window in line.as_bytes().windows(16.min(line.len())).step_by(8) {
            let window = std::str::from_utf8(window).expect("base64 is ASCII");
            assert!(
                !shown.contains(window),
                "error output contains key material {window:?}: {shown}"
            );
        }
    }
}

const MESSAGE: &[u8] = br#"{"check":"unit","command":"cargo test","exit":0,"v":1}"#;

#[test]
fn our_signatures_verify_with_ssh_keygen() {
    let sandbox = Sandbox::new();
    let key = SigningKey::from_seed(&[42u8; 32]);
    let signature = key.sign(MESSAGE).unwrap();
    let armored = armor_sshsig(key.public(), &signature);
    assert!(armored.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
    fs::write(sandbox.path("sig.file"), &armored).unwrap();
    fs::write(
        sandbox.path("allowed_signers"),
        format!(
            "principal namespaces=\"{NAMESPACE}\" {}\n",
            key.public().to_openssh()
        ),
    )
    .unwrap();
    let verify_args = |namespace: &'static str| {
        [
            "-Y",
            "verify",
            "-f",
            "allowed_signers",
            "-I",
            "principal",
            "-n",
            namespace,
            "-s",
            "sig.file",
        ]
    };

    let stdout = sandbox.ssh_keygen_ok(&verify_args("git-receipt"), MESSAGE);
    assert!(
        stdout.contains("Good \"git-receipt\" signature"),
        "{stdout}"
    );

    let mut tampered = MESSAGE.to_vec();
    tampered[10] ^= 1;
    let output = sandbox.ssh_keygen(&verify_args("git-receipt"), &tampered);
    assert!(
        !output.status.success(),
        "ssh-keygen accepted a tampered message"
    );

    let output = sandbox.ssh_keygen(&verify_args("other"), MESSAGE);
    assert!(
        !output.status.success(),
        "ssh-keygen accepted the signature in namespace `other`"
    );
}

#[test]
fn ssh_keygen_signs_exactly_what_we_sign() {
    // Ed25519 is deterministic, so OpenSSH signing with the same key must produce the
    // very same signature bytes (and, ideally, the same armored file).
    let sandbox = Sandbox::new();
    let seed = [42u8; 32];
    let key = SigningKey::from_seed(&seed);
    let key_path = sandbox.path("seeded");
    ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from_seed(&seed))
        .write_openssh_file(&key_path, ssh_key::LineEnding::LF)
        .unwrap();
    fs::set_permissions(&key_path, fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(SigningKey::load(&key_path).unwrap().public(), key.public());

    fs::write(sandbox.path("message"), MESSAGE).unwrap();
    sandbox.ssh_keygen_ok(
        &["-Y", "sign", "-f", "seeded", "-n", NAMESPACE, "message"],
        b"",
    );
    let theirs = fs::read_to_string(sandbox.path("message.sig")).unwrap();
    let sshsig = ssh_key::SshSig::from_pem(&theirs).unwrap();
    assert_eq!(sshsig.signature_bytes(), key.sign(MESSAGE).unwrap());
    assert_eq!(
        theirs,
        armor_sshsig(key.public(), &key.sign(MESSAGE).unwrap())
    );
}

#[test]
fn ssh_keygen_keys_load_and_their_signatures_verify() {
    let sandbox = Sandbox::new();
    let key_path = sandbox.keygen("k", "ed25519", "", &[]);
    let key = SigningKey::load(&key_path).expect("load a key made by ssh-keygen");

    let public_line = fs::read_to_string(sandbox.path("k.pub")).unwrap();
    assert_eq!(key.public().to_openssh(), fields(&public_line, 2));
    assert_eq!(
        &PublicKey::from_openssh(&public_line).unwrap(),
        key.public()
    );

    let listing = sandbox.ssh_keygen_ok(&["-lf", "k.pub"], b"");
    let fingerprint = listing
        .split_whitespace()
        .nth(1)
        .expect("ssh-keygen -lf output");
    assert_eq!(key.public().fingerprint(), fingerprint, "{listing}");

    fs::write(sandbox.path("file"), MESSAGE).unwrap();
    sandbox.ssh_keygen_ok(&["-Y", "sign", "-f", "k", "-n", "git-receipt", "file"], b"");
    let armored = fs::read_to_string(sandbox.path("file.sig")).unwrap();
    let sshsig = ssh_key::SshSig::from_pem(&armored).expect("parse ssh-keygen's SSHSIG");
    assert_eq!(sshsig.namespace(), NAMESPACE);
    assert_eq!(sshsig.hash_alg(), ssh_key::HashAlg::Sha512);
    assert_eq!(sshsig.algorithm(), ssh_key::Algorithm::Ed25519);
    assert_eq!(
        sshsig.public_key().ed25519().map(|k| k.0),
        Some(*key.public().as_bytes())
    );
    let raw = sshsig.signature_bytes();
    verify(key.public(), MESSAGE, raw).expect("ssh-keygen's signature verifies");
    assert!(verify(key.public(), b"another message", raw).is_err());
    assert!(verify_raw_strict(key.public().as_bytes(), MESSAGE, raw).is_err());
    assert_eq!(raw, key.sign(MESSAGE).unwrap(), "Ed25519 is deterministic");

    // CRLF line endings and lax permissions are accepted.
    let crlf_path = sandbox.path("k_crlf");
    let contents = fs::read_to_string(&key_path).unwrap();
    fs::write(&crlf_path, contents.replace('\n', "\r\n")).unwrap();
    fs::set_permissions(&crlf_path, fs::Permissions::from_mode(0o644)).unwrap();
    let crlf_key = SigningKey::load(&crlf_path).expect("load a CRLF key file");
    assert_eq!(crlf_key.public(), key.public());
}

#[test]
fn unusable_keys_give_precise_errors_without_key_material() {
    let sandbox = Sandbox::new();

    let encrypted = sandbox.keygen("encrypted", "ed25519", "secretpass", &[]);
    let err = SigningKey::load(&encrypted).unwrap_err();
    assert!(
        matches!(&err, KeyError::Encrypted { path } if path == &encrypted),
        "{err:?}"
    );
    assert!(err.to_string().contains(&encrypted.display().to_string()));
    assert!(err.to_string().contains("ssh-keygen -p"), "{err}");
    assert_no_key_material(&err, &encrypted);

    for (name, key_type, extra, expected) in [
        ("ecdsa", "ecdsa", &[][..], "ecdsa-sha2-nistp256"),
        ("rsa", "rsa", &["-b", "2048"][..], "ssh-rsa"),
        (
            "rsa_pem",
            "rsa",
            &["-b", "2048", "-m", "PEM"][..],
            "ssh-rsa",
        ),
    ] {
        let path = sandbox.keygen(name, key_type, "", extra);
        let err = SigningKey::load(&path).unwrap_err();
        assert!(
            matches!(
                &err,
                KeyError::NotEd25519 { path: Some(p), algorithm } if p == &path && algorithm == expected
            ),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("ssh-keygen -t ed25519"), "{err}");
        assert_no_key_material(&err, &path);
    }

    // An encrypted key of another type is reported as the wrong type: decrypting it
    // would not help.
    let encrypted_ecdsa = sandbox.keygen("encrypted_ecdsa", "ecdsa", "secretpass", &[]);
    let err = SigningKey::load(&encrypted_ecdsa).unwrap_err();
    assert!(matches!(err, KeyError::NotEd25519 { .. }), "{err:?}");
    assert_no_key_material(&err, &encrypted_ecdsa);

    // A corrupted unencrypted key: one base64 character changed inside the private part.
    let good = sandbox.keygen("good", "ed25519", "", &[]);
    let corrupted = sandbox.path("corrupted");
    let mut lines: Vec<String> = fs::read_to_string(&good)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let line = &mut lines[4];
    let replacement = if line.starts_with('A') { "B" } else { "A" };
    line.replace_range(0..1, replacement);
    fs::write(&corrupted, lines.join("\n") + "\n").unwrap();
    let err = SigningKey::load(&corrupted).unwrap_err();
    assert!(
        matches!(err, KeyError::Malformed { path: Some(ref p), .. } if p == &corrupted),
        "{err:?}"
    );
    assert_no_key_material(&err, &corrupted);
    assert_no_key_material(&err, &good);

    // Pointing at the .pub file is a recognisable mistake.
    let err = SigningKey::load(&sandbox.path("good.pub")).unwrap_err();
    assert!(matches!(err, KeyError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("without .pub"), "{err}");

    let missing = sandbox.path("does/not/exist");
    let err = SigningKey::load(&missing).unwrap_err();
    assert!(
        matches!(&err, KeyError::NotFound { path } if path == &missing),
        "{err:?}"
    );
    assert!(err.to_string().contains(&missing.display().to_string()));

    let err = SigningKey::load(sandbox.dir.path()).unwrap_err();
    assert!(matches!(err, KeyError::Unreadable { .. }), "{err:?}");
}

#[test]
fn generated_keys_are_private_and_readable_by_ssh_keygen() {
    let sandbox = Sandbox::new();
    let path = sandbox.path("config/git-receipt/keys/signing");
    let key = SigningKey::generate(&path, "ci@example.com").expect("generate a key");

    assert_eq!(mode(&path), 0o600);
    for dir in ["config", "config/git-receipt", "config/git-receipt/keys"] {
        assert_eq!(mode(&sandbox.path(dir)), 0o700, "{dir}");
    }
    let public_path = sandbox.path("config/git-receipt/keys/signing.pub");
    assert_eq!(
        fs::read_to_string(&public_path).unwrap(),
        format!("{} ci@example.com\n", key.public().to_openssh())
    );

    let path_arg = path.to_str().unwrap();
    let derived = sandbox.ssh_keygen_ok(&["-y", "-f", path_arg], b"");
    assert_eq!(fields(&derived, 2), key.public().to_openssh(), "{derived}");
    let listing = sandbox.ssh_keygen_ok(&["-lf", public_path.to_str().unwrap()], b"");
    assert_eq!(
        listing.split_whitespace().nth(1),
        Some(key.public().fingerprint().as_str())
    );

    // OpenSSH can sign with the generated file, and we verify what it signs.
    fs::write(sandbox.path("message"), MESSAGE).unwrap();
    sandbox.ssh_keygen_ok(
        &["-Y", "sign", "-f", path_arg, "-n", NAMESPACE, "message"],
        b"",
    );
    let sshsig =
        ssh_key::SshSig::from_pem(fs::read_to_string(sandbox.path("message.sig")).unwrap())
            .unwrap();
    verify(key.public(), MESSAGE, sshsig.signature_bytes()).unwrap();

    // Refuses to overwrite, and leaves the existing files alone.
    let before = fs::read(&path).unwrap();
    let err = SigningKey::generate(&path, "again").unwrap_err();
    assert!(
        matches!(&err, KeyError::Exists { path: p } if p == &path),
        "{err:?}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);

    // An existing .pub alone also blocks generation.
    let lonely = sandbox.path("lonely");
    fs::write(sandbox.path("lonely.pub"), "ssh-ed25519 AAAA stale\n").unwrap();
    let err = SigningKey::generate(&lonely, "").unwrap_err();
    assert!(matches!(err, KeyError::Exists { .. }), "{err:?}");
    assert!(!lonely.exists());
}
