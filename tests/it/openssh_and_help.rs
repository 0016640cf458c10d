//! Interop with OpenSSH (`ssh-keygen -Y verify` checks a receipt with no
//! git-receipt code involved) and the help/man pages.

use crate::common::{self, Env};
use std::process::Command;

#[test]
fn a_receipt_rearmored_as_sshsig_verifies_with_ssh_keygen() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    let body = env.receipt_ok(&repo, &["show", "--body", &id]).raw_stdout;
    let sig = env
        .receipt_ok(&repo, &["show", "--sshsig", &id[..20]])
        .stdout;
    assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----"), "{sig}");
    let pubkey = env.receipt_ok(&repo, &["key", "show"]).stdout;
    let allowed = env.path("allowed_signers");
    std::fs::write(
        &allowed,
        format!("ci@example.org namespaces=\"git-receipt\" {}", pubkey),
    )
    .unwrap();
    let sig_file = env.path("msg.sig");
    std::fs::write(&sig_file, &sig).unwrap();

    let verify = |message: &[u8], namespace: &str| {
        env.ssh_keygen_verify(&allowed, "ci@example.org", namespace, &sig_file, message)
    };
    let ok = verify(&body, "git-receipt");
    assert!(
        ok.status.success(),
        "ssh-keygen accepts the receipt: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // the signed message is exactly the body inside the stored envelope
    let chain_commit = env.log_json(&repo)[0]["chain_commit"]
        .as_str()
        .unwrap()
        .to_owned();
    let stored = env.receipt_bytes(&repo, &chain_commit);
    let prefix = b"{\"receipt\":";
    assert!(stored.starts_with(prefix));
    assert_eq!(&stored[prefix.len()..prefix.len() + body.len()], &body[..]);
    let mut tampered = body.clone();
    let n = tampered.len() / 2;
    tampered[n] ^= 1;
    assert!(
        !verify(&tampered, "git-receipt").status.success(),
        "a changed byte fails"
    );
    assert!(
        !verify(&body, "other-namespace").status.success(),
        "another namespace fails"
    );
}

#[test]
fn sshsig_of_an_untrusted_receipt_needs_the_key() {
    let env = Env::new();
    let repo = env.fixture_repo("make_basic_repo.sh", "repo");
    env.receipt_ok(&repo, &["run", "test"]);
    let id = env.log_json(&repo)[0]["id"].as_str().unwrap().to_owned();
    // another user (another HOME, so another key) looks at the same repository
    let other = Env::new();
    let r = other.receipt(&repo, &["show", "--sshsig", &id]);
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("not a trusted key here"), "{r}");
    assert!(r.stderr.contains("--key FILE"), "{r}");
    let pubfile = env.home.join(".config/git-receipt/signing_key.pub");
    let r = other.receipt(
        &repo,
        &["show", "--sshsig", &id, "--key", pubfile.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{r}");
    // what --key produced is a signature OpenSSH accepts for that key
    let sig_file = other.path("msg.sig");
    std::fs::write(&sig_file, &r.stdout).unwrap();
    let allowed = other.path("allowed_signers");
    let pubkey = std::fs::read_to_string(&pubfile).unwrap();
    std::fs::write(&allowed, format!("dev namespaces=\"git-receipt\" {pubkey}")).unwrap();
    let body = other.receipt_ok(&repo, &["show", "--body", &id]).raw_stdout;
    let out = other.ssh_keygen_verify(&allowed, "dev", "git-receipt", &sig_file, &body);
    assert!(
        out.status.success(),
        "ssh-keygen verifies the --key signature: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // a key that did not sign it is refused, not re-armored
    let r = other.receipt_ok(&repo, &["key", "generate"]);
    let wrong = other.home.join(".config/git-receipt/signing_key.pub");
    assert!(wrong.exists(), "{r}");
    let r = other.receipt(
        &repo,
        &["show", "--sshsig", &id, "--key", wrong.to_str().unwrap()],
    );
    assert_eq!(r.code, 2, "{r}");
    assert!(r.stderr.contains("but receipt"), "{r}");
    let r = other.receipt_ok(&repo, &["show"]);
    assert!(r.stdout.contains("untrusted key"), "{r}");
}

#[test]
fn short_help_comes_from_clap_and_man_pages_render() {
    let env = Env::new();
    let r = env.receipt(env.tmp.path(), &["-h"]);
    assert_eq!(r.code, 0, "{r}");
    for sub in ["run", "record", "show", "log", "key"] {
        assert!(r.stdout.contains(sub), "-h lists {sub}: {r}");
    }
    let r = env.receipt(env.tmp.path(), &["run", "-h"]);
    assert!(r.stdout.contains("Usage: git receipt run"), "{r}");
    let man = env.path("man/man1");
    env.receipt_ok(env.tmp.path(), &["man", "--out-dir", man.to_str().unwrap()]);
    for page in [
        "git-receipt.1",
        "git-receipt-run.1",
        "git-receipt-show.1",
        "git-receipt-key.1",
    ] {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        assert!(
            text.starts_with(".ie"),
            "{page} is roff: {}",
            &text[..40.min(text.len())]
        );
    }
    // `git receipt --help` is `man git-receipt`; with the pages on MANPATH it resolves
    if common::require_tool("man", "apt-get install man-db") {
        let out = Command::new("man")
            .args(["-w", "git-receipt"])
            .env("MANPATH", env.path("man"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "man finds the page: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
