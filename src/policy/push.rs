//! The pre-push plan (filled in below).
