//! Each rule of `docs/trust.md` as a unit test: trust sets and receipts built in
//! memory from seeded keys, and trust roots chosen in repositories made by stock
//! git ([`crate::freshness::rules::Scratch`]).

use super::*;
use crate::freshness::rules::{Scratch, git_in};
use crate::receipt::{Body, Chain, Kind, Runner, SCHEMA_V2, Subject, format_timestamp};
use crate::sign::SigningKey;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_seed(&[seed; 32])
}

/// A check receipt signed by `by`, started at `started_ms`.
fn receipt(by: &SigningKey, started_ms: u64) -> Receipt<Unverified> {
    let writer = crate::receipt::writer_id(by.public(), "default");
    let body = Body {
        schema: SCHEMA_V2.into(),
        kind: Kind::Check,
        chain: Chain {
            writer,
            index: 0,
            prev: None,
        },
        subject: Subject {
            commit: "11".repeat(20),
            tree: "22".repeat(20),
            inputs: "22".repeat(20),
            dirty: false,
            dependencies: Vec::new(),
        },
        check: crate::receipt::Check {
            name: "test".into(),
            argv: vec!["sh".into(), "-c".into(), "true".into()],
            definition: crate::receipt::definition_digest(&["true".into()], &[], &[]),
            paths: Vec::new(),
            env: Default::default(),
        },
        result: crate::receipt::Outcome {
            started_at: format_timestamp(started_ms),
            passed: true,
            log_bytes: Some(0),
            log_sha256: Some(None),
            ..Default::default()
        },
        runner: Runner {
            tool: "git-receipt test".into(),
            host: "h".into(),
            os: "linux".into(),
        },
        acceptance: None,
        review: None,
        supersedes: None,
    };
    let signed = Receipt::sign(body, by).unwrap();
    Receipt::parse_owned(signed.bytes().to_vec()).unwrap()
}

/// The same receipt with its signature's key field pointing at `other`'s key.
fn with_key_of(r: &Receipt<Unverified>, other: &SigningKey) -> Receipt<Unverified> {
    let text = String::from_utf8(r.bytes().to_vec()).unwrap();
    let text = text.replace(&r.signature().key, &other.public().fingerprint());
    Receipt::parse_owned(text.into_bytes()).unwrap()
}

const DAY: u64 = 86_400_000;
/// 2026-01-01T00:00:00Z.
const T0: u64 = 1_767_225_600_000;

fn entry(k: &SigningKey, after: Option<u64>, before: Option<u64>, revoked: bool) -> Trusted {
    Trusted {
        key: k.public().clone(),
        origin: TrustOrigin::Contract("ci".into()),
        valid_after: after,
        valid_before: before,
        revoked,
    }
}

#[test]
fn section_1_a_receipt_counts_only_by_a_trusted_key_unrevoked_and_inside_its_window() {
    let ci = key(1);
    let r = receipt(&ci, T0);
    let fp = ci.public().fingerprint();
    // no trusted key has its fingerprint
    let empty = TrustSet::default();
    assert_eq!(empty.check_in_place(&r).unwrap_err(), Refusal::Untrusted);
    assert_eq!(
        Refusal::Untrusted.to_string(),
        "not signed by a trusted key"
    );
    let mut t = TrustSet::default();
    t.add_entry(entry(&ci, None, None, false));
    let (verified, by) = t.check(r.clone()).unwrap();
    assert_eq!(verified.id(), r.id());
    assert_eq!(by.key, *ci.public());
    // revoked: refused whenever it claims to have started
    let mut revoked = TrustSet::default();
    revoked.add_entry(entry(&ci, Some(T0 - DAY), Some(T0 + DAY), true));
    let why = revoked.check_in_place(&r).unwrap_err();
    assert_eq!(
        why,
        Refusal::Revoked(format!(
            "key {fp} is revoked (signer \"ci\" in .gitreceipts)"
        ))
    );
    assert_eq!(
        why.to_string(),
        format!("key {fp} is revoked (signer \"ci\" in .gitreceipts)")
    );
    // the window: valid-after is inclusive, valid-before exclusive
    let window = |after, before| {
        let mut t = TrustSet::default();
        t.add_entry(entry(&ci, after, before, false));
        t.check_in_place(&r).err()
    };
    assert_eq!(window(Some(T0), None), None);
    assert_eq!(
        window(Some(T0 + 1), None),
        Some(Refusal::Window(format!(
            "signed at 2026-01-01T00:00:00.000Z but key {fp} is valid only after 2026-01-01T00:00:00.001Z"
        )))
    );
    assert_eq!(window(None, Some(T0 + 1)), None);
    assert_eq!(
        window(None, Some(T0)),
        Some(Refusal::Window(format!(
            "signed at 2026-01-01T00:00:00.000Z but key {fp} expired at 2026-01-01T00:00:00.000Z"
        )))
    );
    assert_eq!(
        window(Some(T0 + 1), None).unwrap().to_string(),
        format!(
            "signed at 2026-01-01T00:00:00.000Z but key {fp} is valid only after 2026-01-01T00:00:00.001Z"
        )
    );
    // a receipt claiming a trusted key it was not signed by
    let forged = with_key_of(&receipt(&key(2), T0), &ci);
    match t.check_in_place(&forged) {
        Err(Refusal::BadSignature(why)) => {
            assert!(!why.is_empty());
            assert_eq!(Refusal::BadSignature(why.clone()).to_string(), why);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(t.check(forged), Err(Refusal::BadSignature(_))));
}

#[test]
fn section_1_refuses_gives_each_reason_and_none_inside_the_window() {
    let ci = key(1);
    let e = entry(&ci, Some(T0), Some(T0 + DAY), false);
    assert_eq!(e.refuses(Some(T0)), None);
    assert_eq!(e.refuses(Some(T0 + DAY - 1)), None);
    assert!(
        e.refuses(Some(T0 - 1))
            .unwrap()
            .contains("valid only after")
    );
    assert!(e.refuses(Some(T0 + DAY)).unwrap().contains("expired at"));
    // no time known: only a revocation refuses
    assert_eq!(e.refuses(None), None);
    let r = entry(&ci, None, None, true);
    assert!(r.refuses(None).unwrap().contains("is revoked"));
    assert_eq!(entry(&ci, None, None, false).refuses(Some(0)), None);
}

#[test]
fn section_1_check_many_gives_each_receipt_the_answer_check_in_place_gives() {
    let (a, b, c) = (key(1), key(2), key(3));
    let mut t = TrustSet::default();
    t.add_entry(entry(&a, None, None, false));
    t.add_entry(entry(&b, None, None, true));
    let receipts = [
        receipt(&a, T0),
        receipt(&b, T0),
        receipt(&c, T0),
        with_key_of(&receipt(&c, T0), &a),
        receipt(&a, T0 + 1),
    ];
    let refs: Vec<&Receipt<Unverified>> = receipts.iter().collect();
    let many = t.check_many(&refs);
    assert_eq!(many.len(), receipts.len());
    for (r, got) in receipts.iter().zip(&many) {
        let alone = t.check_in_place(r);
        assert_eq!(
            got.as_ref().map(|t| t.key.fingerprint()),
            alone.as_ref().map(|t| t.key.fingerprint()),
        );
    }
    assert!(many[0].is_ok() && many[4].is_ok());
    assert!(matches!(many[1], Err(Refusal::Revoked(_))));
    assert_eq!(many[2].as_ref().unwrap_err(), &Refusal::Untrusted);
    assert!(matches!(many[3], Err(Refusal::BadSignature(_))));
    assert!(t.check_many(&[]).is_empty());
}

#[test]
fn section_3_a_contract_s_signers_are_trusted_with_their_windows_and_revocations() {
    let (ci, ada, old) = (key(1), key(2), key(3));
    let text = format!(
        "[signer \"ci\"]\n\tkey = {}\n[signer \"ada\"]\n\tkey = {}\n\tvalid-after = 2026-01-01\n\tvalid-before = 2027-01-01T00:00:00Z\n[signer \"old-laptop\"]\n\tkey = {}\n\trevoked = true\n",
        ci.public().to_openssh(),
        ada.public().to_openssh(),
        old.public().to_openssh()
    );
    let contract = crate::freshness::rules::contract(&text);
    let mut t = TrustSet::default();
    t.add_contract(contract);
    assert_eq!(t.keys().len(), 3);
    let names: Vec<String> = t.keys().map(|k| k.origin.to_string()).collect();
    assert_eq!(
        names,
        [
            "signer \"ci\" in .gitreceipts",
            "signer \"ada\" in .gitreceipts",
            "signer \"old-laptop\" in .gitreceipts"
        ]
    );
    let ada_entry = t.lookup(&ada.public().fingerprint()).unwrap();
    assert_eq!(ada_entry.valid_after, Some(T0));
    assert_eq!(ada_entry.valid_before, Some(T0 + 365 * DAY));
    assert!(!ada_entry.revoked);
    assert!(t.lookup(&old.public().fingerprint()).unwrap().revoked);
    assert!(t.check_in_place(&receipt(&ci, T0)).is_ok());
    assert!(matches!(
        t.check_in_place(&receipt(&ada, T0 - 1)),
        Err(Refusal::Window(_))
    ));
    assert!(matches!(
        t.check_in_place(&receipt(&old, T0)),
        Err(Refusal::Revoked(_))
    ));
    assert!(t.may_sign_as(&crate::receipt::writer_id(ada.public(), "laptop")));
}

#[test]
fn section_3_a_key_given_twice_is_held_to_every_entry_nothing_is_widened() {
    let k = key(1);
    // as your key first, then as a narrower, revoked signer of a contract
    let mut t = TrustSet::default();
    t.add(k.public().clone(), TrustOrigin::OwnKey);
    t.add_contract(Contract {
        signers: vec![crate::contract::SignerDef {
            name: "ci".into(),
            key: k.public().clone(),
            valid_after: Some(T0),
            valid_before: None,
            revoked: false,
            observer: false,
        }],
        ..Contract::default()
    });
    assert_eq!(t.keys().len(), 1, "one key, one entry");
    let e = t.lookup(&k.public().fingerprint()).unwrap();
    assert_eq!(e.origin, TrustOrigin::OwnKey);
    assert_eq!(e.valid_after, Some(T0));
    // the contract's signer first, then your key: the window stays
    let mut t = TrustSet::default();
    t.add_contract(Contract {
        signers: vec![crate::contract::SignerDef {
            name: "ci".into(),
            key: k.public().clone(),
            valid_after: None,
            valid_before: Some(T0),
            revoked: true,
            observer: false,
        }],
        ..Contract::default()
    });
    t.add(k.public().clone(), TrustOrigin::OwnKey);
    let e = t.lookup(&k.public().fingerprint()).unwrap();
    assert_eq!(e.origin, TrustOrigin::Contract("ci".into()));
    assert_eq!((e.valid_before, e.revoked), (Some(T0), true));
    // a later entry never un-revokes, and the earlier valid-before wins
    let mut a = entry(&k, Some(T0), Some(T0 + 2 * DAY), true);
    a.narrow(&entry(&k, Some(T0 - DAY), Some(T0 + DAY), false));
    assert_eq!(
        (a.valid_after, a.valid_before, a.revoked),
        (Some(T0), Some(T0 + DAY), true)
    );
    let mut b = entry(&k, None, None, false);
    b.narrow(&entry(&k, None, Some(T0), false));
    assert_eq!(b.valid_before, Some(T0));
    let mut c = entry(&k, None, Some(T0), false);
    c.narrow(&entry(&k, None, None, false));
    assert_eq!((c.valid_before, c.revoked), (Some(T0), false));
}

#[test]
fn section_2_the_default_branch_tip_restricts_and_never_adds_trust() {
    let (k, narrowed, stranger) = (key(1), key(2), key(3));
    let mut t = TrustSet::default();
    t.add(k.public().clone(), TrustOrigin::Config);
    t.add(narrowed.public().clone(), TrustOrigin::Config);
    let signer = |key: &SigningKey, before, revoked| crate::contract::SignerDef {
        name: "x".into(),
        key: key.public().clone(),
        valid_after: None,
        valid_before: before,
        revoked,
        observer: false,
    };
    t.restrict(&Contract {
        signers: vec![
            signer(&k, None, false),
            signer(&narrowed, Some(T0), false),
            signer(&stranger, None, true),
        ],
        ..Contract::default()
    });
    assert_eq!(t.keys().len(), 2, "restrict trusts no new key");
    assert!(t.lookup(&stranger.public().fingerprint()).is_none());
    let kept = t.lookup(&k.public().fingerprint()).unwrap();
    assert_eq!((kept.valid_before, kept.revoked), (None, false));
    assert_eq!(
        t.lookup(&narrowed.public().fingerprint())
            .unwrap()
            .valid_before,
        Some(T0)
    );
    // a revocation there reaches a contract's signer too
    let mut t = TrustSet::default();
    t.add_contract(Contract {
        signers: vec![signer(&k, None, false)],
        ..Contract::default()
    });
    t.restrict(&Contract {
        signers: vec![signer(&k, None, true)],
        ..Contract::default()
    });
    assert!(t.lookup(&k.public().fingerprint()).unwrap().revoked);
    let mut t = TrustSet::default();
    t.add(k.public().clone(), TrustOrigin::Config);
    t.restrict(&Contract {
        signers: vec![crate::contract::SignerDef {
            valid_after: Some(T0),
            ..signer(&k, None, false)
        }],
        ..Contract::default()
    });
    assert_eq!(
        t.lookup(&k.public().fingerprint()).unwrap().valid_after,
        Some(T0)
    );
}

#[test]
fn section_2_a_writer_id_names_a_trusted_key_only_in_lowercase_hex() {
    let k = key(1);
    let mut t = TrustSet::default();
    assert!(!t.may_sign_as(&crate::receipt::writer_id(k.public(), "default")));
    t.add(k.public().clone(), TrustOrigin::Config);
    let w = crate::receipt::writer_id(k.public(), "default");
    assert!(t.may_sign_as(&w));
    assert!(!t.may_sign_as("default"));
    assert!(!t.may_sign_as(&w.replace('-', "")));
    assert!(!t.may_sign_as(&format!("{}-zz", &w[..w.len() - 3])));
    let suffix = w.rsplit_once('-').unwrap().1;
    if suffix.bytes().any(|b| b.is_ascii_lowercase()) {
        assert!(!t.may_sign_as(&w.to_uppercase()));
    }
    assert!(!t.may_sign_as(&crate::receipt::writer_id(key(2).public(), "default")));
}

#[test]
fn section_2_origins_are_named_for_messages() {
    assert_eq!(TrustOrigin::OwnKey.to_string(), "your key");
    assert_eq!(TrustOrigin::Config.to_string(), "receipt.trustedKey");
    assert_eq!(
        TrustOrigin::AllowedSigners("ci@example.org".into()).to_string(),
        "allowed signer ci@example.org"
    );
    assert_eq!(
        TrustOrigin::Contract("ci".into()).to_string(),
        "signer \"ci\" in .gitreceipts"
    );
}

#[test]
fn section_4_allowed_signers_options_and_namespaces() {
    let k = key(7);
    let line = k.public().to_openssh();
    let parse = |text: &str| {
        let mut t = TrustSet::default();
        t.add_allowed_signers(text, "allowed").map(|()| t)
    };
    // no options; options quoted with commas inside; key type first
    let t = parse(&format!("ci@example.org {line}\n")).unwrap();
    assert_eq!(t.keys().len(), 1);
    assert_eq!(
        t.keys().next().unwrap().origin,
        TrustOrigin::AllowedSigners("ci@example.org".into())
    );
    let t = parse(&format!(
        "a,b NAMESPACES=\"file,git-receipt\",Valid-After=\"20260101\" {line}\n"
    ))
    .unwrap();
    let e = t.keys().next().unwrap();
    assert_eq!(e.valid_after, Some(T0));
    assert_eq!(e.origin, TrustOrigin::AllowedSigners("a,b".into()));
    let t = parse(&format!("x valid-before=\"20260101\" {line}\n")).unwrap();
    assert_eq!(t.keys().next().unwrap().valid_before, Some(T0));
    // a negated namespace refuses the line whatever else matched
    assert_eq!(
        parse(&format!("x namespaces=\"*,!git-receipt\" {line}\n"))
            .unwrap()
            .keys()
            .len(),
        0
    );
    assert_eq!(
        parse(&format!("x namespaces=\"git\" {line}\n"))
            .unwrap()
            .keys()
            .len(),
        0
    );
    // blank and comment lines
    assert_eq!(
        parse("\n   \n# x y z\n").unwrap().keys().len(),
        0,
        "nothing to trust"
    );
    // errors name the file and line
    assert_eq!(
        parse(&format!("\n\nx unknown-option {line}\n"))
            .err()
            .unwrap(),
        "allowed:3: unknown option \"unknown-option\""
    );
    assert_eq!(parse("lonely\n").err().unwrap(), "allowed:1: no principals");
    assert_eq!(
        parse(&format!("x valid-after=\"soon\" {line}\n"))
            .err()
            .unwrap(),
        "allowed:1: valid-after \"soon\" is not a time"
    );
    assert_eq!(
        parse(&format!("x valid-before=\"later\" {line}\n"))
            .err()
            .unwrap(),
        "allowed:1: valid-before \"later\" is not a time"
    );
    assert!(
        parse(&format!("x cert-authority {line}\n"))
            .err()
            .unwrap()
            .starts_with("allowed:1: cert-authority entries are not supported")
    );
    assert!(parse("x ssh-ed25519 AAAA\n").is_err());
    // an options field that starts like a key type is the key
    assert!(parse("x ecdsa-sha2-nistp256 AAAA\n").is_err());
    assert!(parse("x sk-ssh-ed25519@openssh.com AAAA\n").is_err());
    assert_eq!(split_options("a,b=\"x,y\",c"), ["a", "b=\"x,y\"", "c"]);
    assert_eq!(split_options("a"), ["a"]);
    assert!(split_options("").is_empty());
    assert_eq!(split_field("a  b c"), Some(("a", "b c")));
    assert_eq!(split_field("a"), None);
}

#[test]
fn section_4_namespace_wildcards_are_openssh_s() {
    for (pattern, name, any_one, want) in [
        ("git-receipt", "git-receipt", true, true),
        ("git-receip?", "git-receipt", true, true),
        ("git-receip?", "git-receipt", false, false),
        ("git-receip?", "git-receip?", false, true),
        ("*", "", true, true),
        ("", "", true, true),
        ("", "x", true, false),
        ("x", "", true, false),
        ("a*", "abc", true, true),
        ("*c", "abc", true, true),
        ("*b*", "abc", true, true),
        ("a*c", "ac", true, true),
        ("a*c", "abd", true, false),
        ("a*b*c", "aXbYbZc", true, true),
        ("a**", "a", true, true),
        ("a?", "a", true, false),
        ("ab", "a", true, false),
        ("a", "ab", true, false),
        ("refs/heads/*", "refs/heads/a/b", false, true),
        ("release-*-rc", "release-1-2-rc", false, true),
        ("release-*-rc", "release-1-2-rd", false, false),
    ] {
        assert_eq!(
            wildcard_match(pattern, name, any_one),
            want,
            "{pattern:?} {name:?} {any_one}"
        );
    }
    assert!(namespace_matches("git-*", "git-receipt"));
    assert!(!namespace_matches("git", "git-receipt"));
    // a pattern of 1023 bytes or more is given up on, as OpenSSH does
    let long = format!("{}*", "g".repeat(1021));
    assert_eq!(match_pattern_list("git-receipt", &long), PatternMatch::None);
    assert_eq!(
        match_pattern_list("git-receipt", &format!("{},*", "x".repeat(1022))),
        PatternMatch::Positive
    );
}

#[test]
fn section_3_times_are_utc_in_every_accepted_spelling() {
    let s = |t: &str| parse_signer_time(t).map(|ms| ms / 1000);
    for (text, want) in [
        ("1970-01-01", 0),
        ("19700102000001", 86_401),
        ("1971-01-01", 31_536_000),
        ("1972-03-01", 68_256_000),
        ("1999-12-31T23:59:59Z", 946_684_799),
        ("2000-02-29T12:00:00", 951_825_600),
        ("200003010000", 951_868_800),
        ("2024-02-29T23:59:59Z", 1_709_251_199),
        ("2026-01-31T12:34:56Z", 1_769_862_896),
        ("2038-01-19T03:14:08", 2_147_483_648),
        ("2100-03-01", 4_107_542_400),
        ("2026-12-31T23:59:60Z", 1_798_761_600),
        (" 2026-01-31T12:34:56Z ", 1_769_862_896),
    ] {
        assert_eq!(s(text), Some(want), "{text}");
    }
    assert_eq!(parse_signer_time("2026-01-31"), Some(1_769_817_600_000));
    for bad in [
        "",
        "2026",
        "2026-01",
        "202601311",
        "2026013112345",
        "2026-00-10",
        "2026-13-10",
        "2026-01-00",
        "2026-01-32",
        "2026-01-31T24:00:00",
        "2026-01-31T23:60:00",
        "2026-01-31T23:59:61",
        "2026/01/31",
        "2026-01-31 12:00:00",
        "1969-12-31",
        "+2026-01-31",
        "202601311234567",
        "2026-01-31T12:34:56:78",
        "2026-01-3\u{661}",
        "2026-01-31T12:34:56Z\u{0}",
    ] {
        assert_eq!(parse_signer_time(bad), None, "{bad:?}");
    }
    assert_eq!(
        timestamp_ms("2026-01-31T12:34:56.007Z"),
        Some(1_769_862_896_007)
    );
    assert_eq!(timestamp_ms("2026-01-31T12:34:56Z"), None, "no millis");
    assert_eq!(timestamp_ms("2026-01-31T12:34:56.x"), None);
    assert_eq!(timestamp_ms("nope.1"), None);
}

#[test]
fn section_3_the_digest_hasher_mixes_the_first_eight_bytes() {
    use std::hash::Hasher;
    let mut h = DigestHasher::default();
    assert_eq!(h.finish(), 0);
    h.write(&[1, 0, 0, 0, 0, 0, 0, 0, 9, 9]);
    assert_eq!(h.finish(), 1);
    h.write(&[3]);
    assert_eq!(h.finish(), (1u64 << 17) ^ 3);
    let mut g = DigestHasher::default();
    g.write(&[0xff; 8]);
    g.write(&[0xff; 8]);
    assert_eq!(g.finish(), u64::MAX.rotate_left(17) ^ u64::MAX);
    assert_eq!(suffix_of(&[7; 32]), [7; 16]);
    let mut d = [0u8; 32];
    d[15] = 1;
    d[16] = 2;
    assert_eq!(suffix_of(&d)[15], 1);
}

/// `main` of `n` commits on its first-parent history, each changing `f`.
fn linear_main(n: usize) -> (Scratch, Vec<gix::ObjectId>) {
    let s = Scratch::new();
    let commits = (0..n)
        .map(|i| s.commit(&[("f", &format!("{i}\n"))], &format!("main {i}")))
        .collect();
    (s, commits)
}

fn root_of(s: &Scratch, rev: gix::ObjectId) -> Result<TrustRoot, TrustRootError> {
    trust_root(&s.store, rev)
}

#[test]
fn section_2_the_trust_root_is_the_newest_first_parent_tip_the_revision_descends_from() {
    let (s, main) = linear_main(12);
    let tip = *main.last().unwrap();
    // on the branch itself
    let r = root_of(&s, tip).unwrap();
    assert_eq!(r.commit, Some(tip));
    assert_eq!(
        r.description,
        format!(
            "signers of .gitreceipts at {} (the tip of refs/heads/main)",
            tip.to_hex_with_len(7)
        )
    );
    // forked k commits back, for every k: gallop and bisection both
    for k in 1..main.len() {
        let fork = main[main.len() - 1 - k];
        s.git(&["checkout", "-q", "-B", "feature", &fork.to_string()]);
        let f = s.commit(&[("g", &format!("{k}\n"))], "feature");
        let r = root_of(&s, f).unwrap();
        assert_eq!(r.commit, Some(fork), "forked {k} back");
        assert_eq!(
            r.description,
            format!(
                "signers of .gitreceipts at {} (refs/heads/main~{k}, on its first-parent history)",
                fork.to_hex_with_len(7)
            )
        );
        // and a commit of main's own history is its own root
        assert_eq!(root_of(&s, fork).unwrap().commit, Some(fork));
    }
    s.git(&["checkout", "-q", "main"]);
}

#[test]
fn section_2_a_commit_only_inside_a_merged_branch_is_never_a_trust_root() {
    // main: M0 --- M1 (merge of docs); docs: A -- B; feature forked from A
    let s = Scratch::new();
    let m0 = s.commit(&[("f", "0\n")], "M0");
    s.git(&["checkout", "-q", "-b", "docs"]);
    let a = s.commit(&[("signer", "mallory\n")], "A");
    s.commit(&[("signer", "")], "B");
    s.git(&["checkout", "-q", "main"]);
    s.git(&["merge", "-q", "--no-ff", "-m", "M1", "docs"]);
    s.git(&["checkout", "-q", "-b", "feature", &a.to_string()]);
    s.commit(&[("x", "1\n")], "F1");
    let f2 = s.commit(&[("x", "2\n")], "F2");
    let r = root_of(&s, f2).unwrap();
    assert_eq!(r.commit, Some(m0), "{}", r.description);
    assert!(r.description.contains("refs/heads/main~1"));
}

#[test]
fn section_2_past_the_walk_limit_it_fails_closed() {
    let (mut s, main) = linear_main(8);
    let fork = main[2]; // main~5
    s.git(&["checkout", "-q", "-b", "feature", &fork.to_string()]);
    let f = s.commit(&[("g", "1\n")], "feature");
    s.git(&["config", "receipt.walkLimit", "5"]);
    s.reopen();
    match root_of(&s, f) {
        Err(e @ TrustRootError::TooFar { .. }) => {
            let TrustRootError::TooFar { rev, branch, limit } = &e else {
                unreachable!()
            };
            assert_eq!(
                (rev.as_str(), branch.as_str(), *limit),
                (
                    f.to_hex_with_len(7).to_string().as_str(),
                    "refs/heads/main",
                    5
                )
            );
            assert!(e.to_string().starts_with(&format!(
                "cannot choose whose signers to trust for {}: none of the newest 5 commits",
                f.to_hex_with_len(7)
            )));
        }
        other => panic!("{other:?}"),
    }
    s.git(&["config", "receipt.walkLimit", "6"]);
    s.reopen();
    assert_eq!(root_of(&s, f).unwrap().commit, Some(fork));
    // a limit that is no positive number is the default
    for bad in ["0", "-3"] {
        s.git(&["config", "receipt.walkLimit", bad]);
        s.reopen();
        assert_eq!(root_of(&s, f).unwrap().commit, Some(fork), "{bad}");
    }
    s.git(&["config", "receipt.walkLimit", "1"]);
    s.reopen();
    assert!(matches!(
        root_of(&s, f),
        Err(TrustRootError::TooFar { limit: 1, .. })
    ));
}

#[test]
fn section_2_no_shared_history_trusts_only_local_keys_and_no_branch_likewise() {
    let (s, main) = linear_main(3);
    s.git(&["checkout", "-q", "--orphan", "lonely"]);
    let lonely = s.commit(&[("h", "1\n")], "lonely root");
    let r = root_of(&s, lonely).unwrap();
    assert_eq!(r.commit, None);
    assert_eq!(
        r.description,
        format!(
            "{} shares no history with the first-parent history of refs/heads/main: only local keys (your key, receipt.trustedKey) are trusted",
            lonely.to_hex_with_len(7)
        )
    );
    // one commit on main is not enough to be past a limit of 1
    let s2 = Scratch::new();
    let only = s2.commit(&[("f", "x\n")], "only");
    s2.git(&["checkout", "-q", "--orphan", "other"]);
    let o = s2.commit(&[("h", "y\n")], "other");
    assert_eq!(root_of(&s2, only).unwrap().commit, Some(only));
    assert_eq!(root_of(&s2, o).unwrap().commit, None);
    // no default branch at all
    let none = Scratch::new();
    none.git(&["checkout", "-q", "-b", "topic"]);
    let t = none.commit(&[("f", "1\n")], "topic");
    let r = root_of(&none, t).unwrap();
    assert_eq!(r.commit, None);
    assert_eq!(
        r.description,
        "no default branch found (set receipt.defaultBranch): only local keys (your key, receipt.trustedKey) are trusted"
    );
    let _ = main;
}

#[test]
fn section_2_the_default_branch_is_configured_origin_head_init_main_or_master() {
    let mut s = Scratch::new();
    let m = s.commit(&[("f", "1\n")], "main");
    s.git(&["branch", "trunk"]);
    s.git(&["checkout", "-q", "-b", "master"]);
    let master = s.commit(&[("f", "2\n")], "master");
    assert_eq!(
        default_branch(&s.store).unwrap(),
        Some(("refs/heads/main".to_owned(), m))
    );
    s.git(&["config", "init.defaultBranch", "master"]);
    s.reopen();
    assert_eq!(
        default_branch(&s.store).unwrap(),
        Some(("refs/heads/master".to_owned(), master))
    );
    s.git(&["update-ref", "refs/remotes/origin/trunk", &m.to_string()]);
    s.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    s.reopen();
    assert_eq!(
        default_branch(&s.store).unwrap(),
        Some(("refs/remotes/origin/trunk".to_owned(), m))
    );
    s.git(&["config", "receipt.defaultBranch", "refs/heads/master"]);
    s.reopen();
    assert_eq!(
        default_branch(&s.store).unwrap(),
        Some(("refs/heads/master".to_owned(), master))
    );
    // configured but naming nothing: no fallback
    s.git(&["config", "receipt.defaultBranch", "refs/heads/gone"]);
    s.reopen();
    assert_eq!(default_branch(&s.store).unwrap(), None);
    // master alone
    let only_master = Scratch::new();
    only_master.git(&["checkout", "-q", "-b", "master"]);
    let mm = only_master.commit(&[("f", "1\n")], "m");
    assert_eq!(
        default_branch(&only_master.store).unwrap(),
        Some(("refs/heads/master".to_owned(), mm))
    );
}

#[test]
fn section_2_at_the_edge_of_a_shallow_clone_it_fails_closed() {
    let (s, main) = linear_main(6);
    s.git(&["checkout", "-q", "-b", "feature", &main[1].to_string()]);
    s.commit(&[("g", "1\n")], "feature");
    s.git(&["checkout", "-q", "main"]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", s.dir.path().display());
    git_in(
        dir.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "2",
            "--no-single-branch",
            &url,
            "c",
        ],
    );
    let c = dir.path().join("c");
    git_in(&c, &["config", "receipt.index", "false"]);
    git_in(
        &c,
        &["fetch", "-q", "--depth", "2", "origin", "feature:feature"],
    );
    let store = crate::store::Store::open(&c).unwrap();
    let feature = store.resolve_commit("feature").unwrap();
    match trust_root(&store, feature) {
        Err(e @ TrustRootError::Shallow { .. }) => {
            let TrustRootError::Shallow { branch, at, .. } = &e else {
                unreachable!()
            };
            assert_eq!(
                branch, "refs/remotes/origin/main",
                "origin/HEAD, by the branch it names"
            );
            assert_eq!(at, &main[4].to_hex_with_len(7).to_string());
        }
        other => panic!("{other:?}"),
    }
}

/// Every commit's trust root, or the error, as a fresh store answers it.
fn roots_alone(s: &Scratch, commits: &[gix::ObjectId]) -> Vec<String> {
    commits
        .iter()
        .map(|c| {
            let fresh = crate::store::Store::open(s.dir.path()).unwrap();
            format!("{:?}", trust_root(&fresh, *c).map_err(|e| e.to_string()))
        })
        .collect()
}

#[test]
fn section_2_a_range_judged_in_one_store_gets_each_commit_the_root_a_fresh_store_gives() {
    // main: 24 first-parent commits; every third merges a side branch, some
    // forked below the oldest commit asked about, one forked from another side
    // branch; a feature branch forked from a side commit, merging main twice;
    // an unrelated root
    let s = Scratch::new();
    let mut sides: Vec<gix::ObjectId> = Vec::new();
    for i in 0..24 {
        let m = s.commit(&[("f", &format!("{i}\n"))], &format!("main {i}"));
        if i % 3 == 2 {
            let base = if i > 8 {
                format!("main~{}", i % 7 + 1)
            } else if let Some(side) = sides.last() {
                side.to_string()
            } else {
                m.to_string()
            };
            s.git(&["checkout", "-q", "-B", "side", &base]);
            for j in 0..(i % 4 + 1) {
                sides.push(s.commit(&[(&format!("s{i}.{j}"), "x\n")], "side"));
            }
            s.git(&["checkout", "-q", "main"]);
            s.git(&[
                "merge",
                "-q",
                "--no-ff",
                "-m",
                &format!("merge {i}"),
                "side",
            ]);
        }
    }
    s.git(&["checkout", "-q", "-B", "feature", &sides[3].to_string()]);
    s.commit(&[("g", "1\n")], "feature 1");
    s.commit(&[("g", "2\n")], "feature 2");
    // a merge off the branch whose parents have different roots: the newer counts
    s.git(&["merge", "-q", "--no-ff", "-m", "catch up", "main~5"]);
    s.git(&["merge", "-q", "--no-ff", "-m", "catch up again", "main~2"]);
    s.commit(&[("g", "3\n")], "feature 3");
    s.git(&["checkout", "-q", "--orphan", "lonely"]);
    s.commit(&[("h", "1\n")], "unrelated");
    s.git(&["checkout", "-q", "main"]);
    let all: Vec<gix::ObjectId> = s
        .git(&["rev-list", "--topo-order", "--all"])
        .lines()
        .map(|h| gix::ObjectId::from_hex(h.as_bytes()).unwrap())
        .collect();
    assert!(all.len() > 50, "{}", all.len());
    for limit in ["1000", "9"] {
        s.git(&["config", "receipt.walkLimit", limit]);
        let expected = roots_alone(&s, &all);
        // each kind of answer is among them: the search's, and both failures
        let (kind, other) = if limit == "9" {
            ("none of the newest 9", "shares no history")
        } else {
            ("shares no history", "none of the newest")
        };
        assert!(expected.iter().any(|r| r.contains(kind)), "{expected:#?}");
        assert!(!expected.iter().any(|r| r.contains(other)), "{expected:#?}");
        assert!(
            expected
                .iter()
                .any(|r| r.contains("on its first-parent history"))
        );
        let mut orders = vec![all.clone(), all.iter().rev().copied().collect()];
        // and an order that is neither (a fixed shuffle)
        let mut shuffled = all.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (i * 7919 + 13) % (i + 1));
        }
        orders.push(shuffled);
        for order in orders {
            let shared = crate::store::Store::open(s.dir.path()).unwrap();
            let got: std::collections::HashMap<gix::ObjectId, String> = order
                .iter()
                .map(|c| {
                    let r = trust_root(&shared, *c).map_err(|e| e.to_string());
                    (*c, format!("{r:?}"))
                })
                .collect();
            for (c, want) in all.iter().zip(&expected) {
                assert_eq!(&got[c], want, "{c} at walkLimit {limit}");
            }
        }
    }
}

#[test]
fn section_2_a_store_asked_again_after_the_branch_moved_answers_for_the_new_tip() {
    let (s, main) = linear_main(4);
    let old_tip = *main.last().unwrap();
    // the chain below the old tip is read and kept
    assert_eq!(root_of(&s, main[0]).unwrap().commit, Some(main[0]));
    assert!(
        root_of(&s, old_tip)
            .unwrap()
            .description
            .contains("(the tip of refs/heads/main)")
    );
    // the branch moves on, in the same store: the old tip is main~1 now
    let new_tip = s.commit(&[("f", "new\n")], "main 4");
    let r = root_of(&s, old_tip).unwrap();
    assert_eq!(r.commit, Some(old_tip));
    assert!(
        r.description.contains("refs/heads/main~1"),
        "{}",
        r.description
    );
    assert!(
        root_of(&s, new_tip)
            .unwrap()
            .description
            .contains("(the tip of refs/heads/main)")
    );
}
