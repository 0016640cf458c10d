//! The SSH wire encoding (RFC 4251 section 5): the `string` and `uint32` framing that
//! SSHSIG blobs, OpenSSH public keys and the ssh-agent protocol share. A leaf, so that
//! both the signer and the agent client can use it without importing each other.

/// Append an SSH `string` (u32 big-endian length, then the bytes).
pub(crate) fn put_string(out: &mut Vec<u8>, data: &[u8]) {
    let len = u32::try_from(data.len()).expect("SSH strings are shorter than 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
}

/// A cursor over SSH wire-format data. Every read returns `None` past the end.
pub(crate) struct WireReader<'a> {
    rest: &'a [u8],
}

impl<'a> WireReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        WireReader { rest: data }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        let bytes = self.bytes(4)?;
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    }

    pub(crate) fn string(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u32()?).ok()?;
        self.bytes(len)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}
