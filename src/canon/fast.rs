//! A direct canonical writer for the shapes receipts use, for the hot read path.
//!
//! [`super::to_canonical`] builds a checked `serde_json::Value` and hands it to
//! `serde_jcs`: right for every input, but it allocates a node per value, and
//! re-encoding each stored receipt that way was a quarter of `verify`'s time.
//! [`to_canonical_fast`] writes the same bytes straight from the typed value for
//! the subset of serde's data model that receipts use (booleans, integers in the
//! safe range, strings, unit variants, options, sequences, and maps and structs
//! with string keys), sorting members by UTF-16 code units as RFC 8785 does.
//!
//! It answers `None` for anything outside that subset (floats, bytes, integers
//! beyond ±(2^53 − 1), non-string map keys, enum variants with data, a member
//! name emitted twice), and the caller then takes the full path. So it may only
//! ever be *slower* than [`super::to_canonical`], never disagree with it: its
//! unit tests compare the two on hostile strings, key orders and the RFC 8785
//! vectors, and `Receipt::parse` checks the two agree in debug builds.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Impossible};

use super::MAX_SAFE_INTEGER;

/// The canonical bytes of `value`, or `None` when it is outside the subset this
/// writer handles (then use [`super::to_canonical`], which also says why).
pub fn to_canonical_fast<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let mut arena = Arena::default();
    arena.bytes.reserve(2048);
    value.serialize(Writer { arena: &mut arena }).ok()?;
    Some(arena.bytes)
}

/// How many bytes of `bytes` [`to_canonical_fast`] of `value` would be: `Some`
/// only when `bytes` begins with exactly them. The check a reader makes of
/// stored bytes, written into memory this thread keeps for the next call, so
/// it allocates nothing once warm (`verify` checks a receipt's body and
/// signature this way, two checks a receipt).
pub fn canonical_prefix_len<T: Serialize + ?Sized>(value: &T, bytes: &[u8]) -> Option<usize> {
    /// Past this, the memory is let go after the call (a receipt is at most
    /// 256 KiB, and mostly one or two).
    const KEPT: usize = 64 * 1024;
    thread_local! {
        static ARENA: std::cell::RefCell<Arena> = std::cell::RefCell::default();
    }
    let check = |arena: &mut Arena| {
        arena.bytes.clear();
        arena.members.clear();
        let len = value
            .serialize(Writer { arena: &mut *arena })
            .ok()
            .filter(|_| bytes.starts_with(&arena.bytes))
            .map(|_| arena.bytes.len());
        if arena.bytes.capacity() > KEPT {
            *arena = Arena::default();
        }
        len
    };
    ARENA.with(|cell| match cell.try_borrow_mut() {
        Ok(mut arena) => check(&mut arena),
        // mutants: only a serializer that checks canonical bytes itself gets
        // here; a fresh arena answers the same
        Err(_) => check(&mut Arena::default()),
    })
}

/// What the writer writes into: the bytes so far, and the members of the
/// objects still open. An object's members are written one after another at
/// the end of `bytes`, then put in order where the object began; nothing is
/// allocated per object.
#[derive(Default)]
struct Arena {
    bytes: Vec<u8>,
    /// (name, start, end) of each member value of the objects still open.
    members: Vec<(std::borrow::Cow<'static, str>, usize, usize)>,
}

/// Outside the subset: the caller takes the full path.
#[derive(Debug)]
pub struct Unsupported;

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("outside the fast canonical subset")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Unsupported
    }
}

/// Write `s` as a JSON string the way RFC 8785 (ES6 `JSON.stringify`) does:
/// `"` and `\` escaped, the five short escapes, other controls as lowercase
/// `\u00xx`, everything else (DEL and U+2028 included) as it is.
fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    // Most strings escape nothing: one pass without an early exit (which the
    // compiler vectorises) says so, and they are copied whole.
    let plain = bytes.iter().fold(true, |plain, &b| {
        plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            0x00..=0x1f => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.push(b'\\');
        out.push(short);
        if short == b'u' {
            out.extend_from_slice(b"00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn write_int(out: &mut Vec<u8>, negative: bool, magnitude: u64) -> Result<(), Unsupported> {
    if magnitude > MAX_SAFE_INTEGER {
        return Err(Unsupported);
    }
    if negative && magnitude != 0 {
        out.push(b'-');
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = magnitude;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
    Ok(())
}

/// RFC 8785 member order: by UTF-16 code units (byte order for ASCII names).
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        a.cmp(b)
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

struct Writer<'a> {
    arena: &'a mut Arena,
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Impossible<(), Unsupported>;
    type SerializeMap = Object<'a>;
    type SerializeStruct = Object<'a>;
    type SerializeStructVariant = Impossible<(), Unsupported>;

    fn serialize_bool(self, v: bool) -> Result<(), Unsupported> {
        self.arena
            .bytes
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Unsupported> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Unsupported> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Unsupported> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Unsupported> {
        write_int(&mut self.arena.bytes, v < 0, v.unsigned_abs())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Unsupported> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Unsupported> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Unsupported> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Unsupported> {
        write_int(&mut self.arena.bytes, false, v)
    }
    fn serialize_f32(self, _: f32) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_f64(self, _: f64) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_char(self, v: char) -> Result<(), Unsupported> {
        write_str(&mut self.arena.bytes, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Unsupported> {
        write_str(&mut self.arena.bytes, v);
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result<(), Unsupported> {
        self.arena.bytes.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Unsupported> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Unsupported> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unsupported> {
        self.serialize_none()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Unsupported> {
        write_str(&mut self.arena.bytes, variant);
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, Unsupported> {
        self.arena.bytes.push(b'[');
        Ok(Seq {
            arena: self.arena,
            first: true,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, Unsupported> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>, Unsupported> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object<'a>, Unsupported> {
        Ok(Object::new(self.arena))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Object<'a>, Unsupported> {
        Ok(Object::new(self.arena))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

struct Seq<'a> {
    arena: &'a mut Arena,
    first: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        if !std::mem::take(&mut self.first) {
            self.arena.bytes.push(b',');
        }
        value.serialize(Writer {
            arena: &mut *self.arena,
        })
    }
    fn close(self) -> Result<(), Unsupported> {
        self.arena.bytes.push(b']');
        Ok(())
    }
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.element(value)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.element(value)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.element(value)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

/// An object's members, each value written at the end of the arena as it
/// comes, then put in RFC 8785 order where the object began when it ends.
struct Object<'a> {
    arena: &'a mut Arena,
    /// Where the object's bytes begin.
    start: usize,
    /// Its first member in `arena.members`.
    first: usize,
    key: Option<String>,
}

impl<'a> Object<'a> {
    fn new(arena: &'a mut Arena) -> Object<'a> {
        Object {
            start: arena.bytes.len(),
            first: arena.members.len(),
            arena,
            key: None,
        }
    }
    fn member<T: Serialize + ?Sized>(
        &mut self,
        name: std::borrow::Cow<'static, str>,
        value: &T,
    ) -> Result<(), Unsupported> {
        let start = self.arena.bytes.len();
        value.serialize(Writer {
            arena: &mut *self.arena,
        })?;
        let end = self.arena.bytes.len();
        self.arena.members.push((name, start, end));
        Ok(())
    }
    fn close(self) -> Result<(), Unsupported> {
        let Arena { bytes, members } = self.arena;
        let mine = &mut members[self.first..];
        mine.sort_by(|a, b| utf16_order(&a.0, &b.0));
        if mine.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Unsupported); // one name twice: the full path says so
        }
        // the object after its values, then moved to where it began
        let written = bytes.len();
        bytes.push(b'{');
        for (i, (name, start, end)) in mine.iter().enumerate() {
            if i > 0 {
                bytes.push(b',');
            }
            write_str(bytes, name);
            bytes.push(b':');
            bytes.extend_from_within(*start..*end);
        }
        bytes.push(b'}');
        bytes.copy_within(written.., self.start);
        bytes.truncate(self.start + (bytes.len() - written));
        members.truncate(self.first);
        Ok(())
    }
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsupported> {
        self.key = Some(key.serialize(KeyName)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        let name = self.key.take().ok_or(Unsupported)?;
        self.member(name.into(), value)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

impl ser::SerializeStruct for Object<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.member(name.into(), value)
    }
    fn end(self) -> Result<(), Unsupported> {
        self.close()
    }
}

/// Map keys: strings only (serde_json would also quote numbers and booleans; the
/// full path handles those).
struct KeyName;

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = Unsupported;
    type SerializeSeq = Impossible<String, Unsupported>;
    type SerializeTuple = Impossible<String, Unsupported>;
    type SerializeTupleStruct = Impossible<String, Unsupported>;
    type SerializeTupleVariant = Impossible<String, Unsupported>;
    type SerializeMap = Impossible<String, Unsupported>;
    type SerializeStruct = Impossible<String, Unsupported>;
    type SerializeStructVariant = Impossible<String, Unsupported>;

    fn serialize_str(self, v: &str) -> Result<String, Unsupported> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, Unsupported> {
        Ok(v.to_string())
    }
    fn serialize_bool(self, _: bool) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_i8(self, _: i8) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_i16(self, _: i16) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_i32(self, _: i32) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_i64(self, _: i64) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_u8(self, _: u8) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_u16(self, _: u16) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_u32(self, _: u32) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_u64(self, _: u64) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_f32(self, _: f32) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_f64(self, _: f64) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_none(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Unsupported> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, Unsupported> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{canonicalize_json, to_canonical};
    use super::*;

    /// Where the fast writer answers at all, it answers what the full path does.
    fn agrees<T: Serialize + ?Sized>(value: &T) -> bool {
        match to_canonical_fast(value) {
            Some(fast) => {
                assert_eq!(
                    String::from_utf8_lossy(&fast),
                    String::from_utf8_lossy(&to_canonical(value).unwrap())
                );
                true
            }
            None => false,
        }
    }

    #[test]
    fn hostile_strings_escape_as_the_full_path_does() {
        let mut all_bytes = String::new();
        for c in (0u32..0x300)
            .chain(0x2000..0x2100)
            .chain([0xfeff, 0xfffd, 0x1f602])
        {
            all_bytes.push(char::from_u32(c).unwrap());
        }
        for s in [
            "",
            "plain",
            "\u{1b}[2J\u{7}\r\u{7f}",
            "quote \" backslash \\ slash /",
            "\u{2028}\u{2029}",
            "\"><img onerror=alert(1)>",
            all_bytes.as_str(),
        ] {
            assert!(agrees(s), "{s:?}");
            assert!(agrees(&vec![s, s]));
        }
    }

    #[test]
    fn members_sort_by_utf16_like_the_full_path() {
        let mut m = BTreeMap::new();
        // U+1F602 sorts before U+FB33 in UTF-16 but after it in UTF-8.
        for k in [
            "\u{fb33}",
            "\u{1f602}",
            "a",
            "B",
            "",
            "aa",
            "\u{e9}",
            "\u{7f}",
        ] {
            m.insert(k.to_owned(), k.len() as u64);
        }
        assert!(agrees(&m));
        let fast = String::from_utf8(to_canonical_fast(&m).unwrap()).unwrap();
        assert!(fast.find('\u{1f602}') < fast.find('\u{fb33}'), "{fast}");
    }

    #[test]
    fn integers_at_the_edge_of_the_safe_range() {
        let max = MAX_SAFE_INTEGER;
        for v in [0i64, -1, 1, max as i64, -(max as i64), i64::from(i32::MIN)] {
            assert!(agrees(&v), "{v}");
        }
        assert!(agrees(&max));
        for beyond in [max + 1, u64::MAX] {
            assert_eq!(to_canonical_fast(&beyond), None, "{beyond}");
        }
        assert_eq!(to_canonical_fast(&(-(max as i64) - 1)), None);
    }

    #[test]
    fn outside_the_subset_is_none_never_a_guess() {
        assert_eq!(to_canonical_fast(&1.5f64), None);
        assert_eq!(to_canonical_fast(&vec![1.0f64]), None);
        let mut m = BTreeMap::new();
        m.insert(1u32, "numeric key");
        assert_eq!(to_canonical_fast(&m), None);
        #[derive(Serialize)]
        enum E {
            Data(u8),
        }
        assert_eq!(to_canonical_fast(&E::Data(1)), None);
    }

    #[test]
    fn structs_options_and_unit_variants_agree() {
        #[derive(Serialize)]
        #[serde(rename_all = "lowercase")]
        enum Mode {
            Run,
        }
        #[derive(Serialize)]
        struct Inner {
            z: Option<String>,
            a: Vec<Option<u8>>,
            #[serde(skip_serializing_if = "Option::is_none")]
            skipped: Option<u8>,
        }
        #[derive(Serialize)]
        struct Outer {
            mode: Mode,
            inner: Inner,
            flag: bool,
            empty: Vec<u8>,
            unit: (),
        }
        let v = Outer {
            mode: Mode::Run,
            inner: Inner {
                z: None,
                a: vec![Some(1), None],
                skipped: None,
            },
            flag: false,
            empty: vec![],
            unit: (),
        };
        assert!(agrees(&v));
    }

    /// The check of stored bytes answers the length of exactly the canonical
    /// bytes at their start, whatever follows, and nothing for bytes that
    /// differ anywhere in them or end early; call after call (the memory it
    /// keeps holds nothing of the call before), nested objects and maps in
    /// order as the full path writes them.
    #[test]
    fn the_canonical_prefix_is_exactly_the_canonical_bytes() {
        #[derive(Serialize)]
        struct Inner {
            z: Option<String>,
            b: BTreeMap<String, Vec<u8>>,
            a: Vec<BTreeMap<String, bool>>,
        }
        #[derive(Serialize)]
        struct Outer {
            z: Inner,
            m: &'static str,
            a: Inner,
        }
        let inner = |s: &str| Inner {
            z: Some(s.to_owned()),
            b: [("y".to_owned(), vec![1]), ("x".to_owned(), vec![])].into(),
            a: vec![[("q".to_owned(), true), ("p".to_owned(), false)].into()],
        };
        let v = Outer {
            z: inner("\u{1f602}\n"),
            m: "middle",
            a: inner(""),
        };
        let canonical = to_canonical(&v).unwrap();
        assert_eq!(to_canonical_fast(&v).as_ref(), Some(&canonical));
        for _ in 0..2 {
            assert_eq!(canonical_prefix_len(&v, &canonical), Some(canonical.len()));
            let mut longer = canonical.clone();
            longer.extend_from_slice(b",\"rest\"}");
            assert_eq!(canonical_prefix_len(&v, &longer), Some(canonical.len()));
            assert_eq!(
                canonical_prefix_len(&v, &canonical[..canonical.len() - 1]),
                None
            );
            for at in [0, canonical.len() / 2, canonical.len() - 1] {
                let mut changed = canonical.clone();
                changed[at] ^= 0x20;
                assert_eq!(canonical_prefix_len(&v, &changed), None, "{at}");
            }
            assert_eq!(canonical_prefix_len(&1.5f64, b"1.5"), None);
        }
    }

    /// Every RFC 8785 vector without floats: the fast writer and the full path
    /// produce the same bytes from the parsed value.
    #[test]
    fn rfc8785_vectors_agree() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/jcs/input");
        let mut compared = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read(entry.unwrap().path()).unwrap();
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(&text) else {
                continue;
            };
            if let Some(fast) = to_canonical_fast(&value) {
                assert_eq!(fast, canonicalize_json(&text).unwrap());
                compared += 1;
            }
        }
        assert!(compared >= 2, "only {compared} vectors without floats");
    }
}
