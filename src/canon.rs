//! RFC 8785 (JCS) canonical JSON bytes in and out.
