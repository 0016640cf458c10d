//! The server's ref rules (filled in below).
