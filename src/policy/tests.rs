//! Unit tests of the policy.
