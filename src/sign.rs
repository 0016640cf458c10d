//! Ed25519 keys, SSHSIG signing and strict verification.
