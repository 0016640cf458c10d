//! RFC 8785 (JCS) canonical JSON bytes in and out.
//!
//! This module owns the byte form of every receipt body: the exact bytes that are
//! hashed, signed and chained. Two honest writers must produce identical bytes for
//! the same value, and a reader must refuse any byte string that is not the one
//! canonical encoding of what it decodes to; otherwise two different byte strings
//! could carry "the same" receipt and a signature over one would not cover the
//! other. The actual RFC 8785 serialization (ES6 number form, UTF-16 key order,
//! minimal string escapes) is delegated to `serde_jcs`; this module adds what
//! `serde_jcs` does not do:
//!
//! - it refuses integers beyond ±(2^53 − 1) instead of rounding them through
//!   `f64` (`serde_jcs` writes `9007199254740993` as `9007199254740992`);
//! - it refuses NaN and infinities with the JSON pointer of the offending value;
//! - it refuses duplicate member names, both when serializing (a `Serialize` impl
//!   can emit the same key twice, e.g. through `#[serde(flatten)]`) and when
//!   parsing (`serde_json::Value` silently keeps the last duplicate);
//! - on input it checks that the bytes are already canonical, byte for byte.
//!
//! Numbers follow the I-JSON model that RFC 8785 assumes: every number is an
//! IEEE 754 double. A number written as an integer literal (no fraction, no
//! exponent) must lie within ±[`MAX_SAFE_INTEGER`]. A finite float is always
//! accepted by [`to_canonical`]; note that a float with an integral value in
//! `[2^53, 10^21)` is therefore *written* as an integer literal (ES6 form) that
//! [`from_canonical`] refuses. Receipts should not carry such floats.

use std::collections::HashSet;
use std::fmt;

mod fast;
pub use fast::{canonical_prefix_len, to_canonical_fast};

use serde::Serialize;
use serde::ser::{self, SerializeMap as _, Serializer as _};
use serde_json::{Map, Number, Value};

/// Largest integer magnitude a receipt may carry: 2^53 - 1 (I-JSON / RFC 8785 safe range).
///
/// Every JSON number is an IEEE 754 double for RFC 8785, so integers beyond this
/// magnitude cannot all be represented; refusing them keeps "the value" and "its
/// canonical bytes" in one-to-one correspondence.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a value could not be written as, or read from, canonical JSON.
///
/// Paths are JSON pointers (RFC 6901), e.g. `/result/duration_ms`; the empty
/// pointer `""` is the document root.
#[derive(Debug, thiserror::Error)]
pub enum CanonError {
    /// An integer beyond ±(2^53 − 1) somewhere in the value.
    #[error(
        "integer {value} at {} is outside the safe range ±{MAX_SAFE_INTEGER} (2^53-1) \
         that canonical JSON can carry exactly; store larger numbers as strings",
        show_pointer(path)
    )]
    IntegerOutOfRange {
        /// JSON pointer to the number, e.g. `/result/duration_ms`.
        path: String,
        /// The integer as written (decimal, with sign if negative).
        value: String,
    },
    /// A float that is NaN or infinite.
    #[error(
        "number at {} is NaN or infinite, which JSON cannot represent; \
         use a finite value, or null / a string for the special case",
        show_pointer(path)
    )]
    NonFiniteNumber {
        /// JSON pointer to the number.
        path: String,
    },
    /// The bytes are valid JSON but not its canonical form.
    #[error(
        "JSON is valid but not in RFC 8785 canonical form (first difference at byte {offset}); \
         the bytes were altered or produced by a non-canonical writer: re-encode the value \
         with canon::to_canonical rather than editing it by hand"
    )]
    NotCanonical {
        /// Offset of the first byte that differs from the canonical encoding
        /// (the shorter length if one is a prefix of the other).
        offset: usize,
    },
    /// The same member name twice in one object.
    #[error(
        "member name {name:?} appears more than once in the object at {}; \
         object member names must be unique, so remove or rename one of them",
        show_pointer(path)
    )]
    DuplicateMember {
        /// JSON pointer to the object that holds the duplicate.
        path: String,
        /// The duplicated member name, with escapes decoded.
        name: String,
    },
    /// Not JSON at all, not UTF-8, or not the expected shape (unknown member,
    /// wrong type, missing field, ...); also a `Serialize` impl that failed.
    #[error("{0} (expected UTF-8 JSON of the right shape; fix the input or the schema)")]
    Json(#[from] serde_json::Error),
}

/// Renders a JSON pointer for an error message; the root pointer is empty,
/// which reads badly on its own.
fn show_pointer(path: &str) -> String {
    if path.is_empty() {
        "the document root".to_owned()
    } else {
        format!("{path:?}")
    }
}

/// Serialize to canonical bytes. Refuses (never rounds) integers beyond +-(2^53-1) and non-finite floats.
///
/// Also refuses a `Serialize` impl that emits one member name twice in an object
/// ([`CanonError::DuplicateMember`]) rather than silently keeping one of them.
/// Finite floats are always accepted and written in ES6 form (`1e300` becomes
/// `1e+300`); `f32` values are widened exactly to `f64` first, so `0.1f32` is
/// written `0.10000000149011612`.
///
/// # Errors
///
/// [`CanonError::IntegerOutOfRange`], [`CanonError::NonFiniteNumber`],
/// [`CanonError::DuplicateMember`], or [`CanonError::Json`] when the `Serialize`
/// impl fails or uses a map key that is not a string-like scalar.
pub fn to_canonical<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonError> {
    // Range-check while building a `Value` rather than afterwards: serde_json's own
    // `to_value` turns NaN and infinities into `null`, so a later walk could not
    // see them. Only a fully checked `Value` reaches serde_jcs, whose number path
    // casts every integer to f64 without complaint.
    let checked = value.serialize(Checker).map_err(|e| e.0)?;
    Ok(serde_jcs::to_vec(&checked)?)
}

/// Parse bytes that must already be canonical: checks, in this order, valid UTF-8 JSON,
/// no duplicate member names, no integer beyond the safe range, bytes == to_canonical(parsed)
/// (else NotCanonical with the first differing offset), then deserializes into T
/// (so T's #[serde(deny_unknown_fields)] gives "unknown member" errors).
///
/// "Integer" here means a number written without fraction or exponent, judged on
/// the text: serde_json would otherwise turn `18446744073709551616` into a float
/// and the check could not see it.
///
/// # Errors
///
/// The first failing check above, as [`CanonError::Json`],
/// [`CanonError::DuplicateMember`], [`CanonError::IntegerOutOfRange`],
/// [`CanonError::NotCanonical`], or [`CanonError::Json`] again for a shape
/// mismatch with `T`.
pub fn from_canonical<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, CanonError> {
    let value = parse_checked(bytes)?;
    let canonical = to_canonical(&value)?;
    if let Some(offset) = first_difference(bytes, &canonical) {
        return Err(CanonError::NotCanonical { offset });
    }
    // Deserialize from the bytes, not from `value`, so that shape errors carry
    // serde_json's line/column position.
    Ok(serde_json::from_slice::<T>(bytes)?)
}

/// [`from_canonical`] of a type that writes back what it reads, with its answer:
/// `bytes` parsed straight into `T` are accepted when `T` written canonically
/// ([`to_canonical_fast`]) is exactly `bytes`, which proves them canonical and
/// so rules out what the checks of [`from_canonical`] look for (a duplicate
/// member, an unsafe integer), and `from_canonical` ends with the same parse
/// into `T`. Anything else (not canonical, or a member `T` drops, defaults or
/// renames) goes through [`from_canonical`], whose answer and error decide.
/// A large checkpoint payload (a mark per chain) parses in a fraction of the
/// time.
///
/// # Errors
///
/// As [`from_canonical`].
pub fn from_canonical_typed<T>(bytes: &[u8]) -> Result<T, CanonError>
where
    T: serde::de::DeserializeOwned + Serialize,
{
    if let Ok(value) = serde_json::from_slice::<T>(bytes)
        && to_canonical_fast(&value).is_some_and(|c| c == bytes)
    {
        return Ok(value);
    }
    from_canonical(bytes)
}

/// Canonicalize arbitrary JSON text (used by tests and by `git receipt` debugging): parse, then to_canonical.
///
/// The input gets the same duplicate-member and integer-range checks as
/// [`from_canonical`] (but need not be canonical), because serde_json would
/// otherwise silently keep the last duplicate and round huge integers.
///
/// # Errors
///
/// [`CanonError::Json`], [`CanonError::DuplicateMember`] or
/// [`CanonError::IntegerOutOfRange`].
pub fn canonicalize_json(text: &[u8]) -> Result<Vec<u8>, CanonError> {
    to_canonical(&parse_checked(text)?)
}

/// Parses `bytes` into a `Value` after the checks `serde_json` does not do.
fn parse_checked(bytes: &[u8]) -> Result<Value, CanonError> {
    // serde_json first: it validates syntax, UTF-8, lone surrogates and nesting
    // depth (recursion limit 128), so the scanner below can trust the structure
    // and its recursion is bounded.
    let value: Value = serde_json::from_slice(bytes)?;
    let mut scan = Scan {
        bytes,
        pos: 0,
        path: Vec::new(),
        first_big: None,
    };
    scan.value()?;
    // Duplicates outrank range errors (the documented check order), so a range
    // error found earlier in the document is only reported now.
    match scan.first_big {
        Some(err) => Err(err),
        None => Ok(value),
    }
}

/// Offset of the first byte where `a` and `b` differ, `None` if equal.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Whether an integer of this magnitude is within ±[`MAX_SAFE_INTEGER`].
fn is_safe(magnitude: u128) -> bool {
    magnitude <= u128::from(MAX_SAFE_INTEGER)
}

/// One step of a JSON pointer.
enum Seg {
    Key(String),
    Index(usize),
}

impl fmt::Display for Seg {
    /// RFC 6901 escaping: `~` and `/` are the only characters a pointer reserves.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Seg::Key(k) => write!(f, "/{}", k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => write!(f, "/{i}"),
        }
    }
}

fn pointer(path: &[Seg]) -> String {
    path.iter().map(ToString::to_string).collect()
}

// ---------------------------------------------------------------------------
// Input side: a lexical pass over already-validated JSON.
// ---------------------------------------------------------------------------

/// Walks JSON text that serde_json has already accepted, to see what a
/// `Value` hides: repeated member names and the literal text of numbers.
///
/// Keys are compared after decoding escapes (`"a"` and `"\u0061"` are the same
/// name), by letting serde_json decode each key token.
struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: Vec<Seg>,
    /// First out-of-range integer literal; reported only if there is no duplicate.
    first_big: Option<CanonError>,
}

impl Scan<'_> {
    /// Current byte, or 0 at the end (never valid JSON, so loops stop on it).
    fn peek(&self) -> u8 {
        self.bytes.get(self.pos).copied().unwrap_or(0)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Result<(), CanonError> {
        self.skip_ws();
        match self.peek() {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => {
                self.string_token();
                Ok(())
            }
            b'-' | b'0'..=b'9' => {
                self.number();
                Ok(())
            }
            // true / false / null
            _ => {
                while self.peek().is_ascii_alphabetic() {
                    self.pos += 1;
                }
                Ok(())
            }
        }
    }

    fn object(&mut self) -> Result<(), CanonError> {
        self.pos += 1; // '{'
        let mut seen = HashSet::new();
        loop {
            self.skip_ws();
            match self.peek() {
                b',' => {
                    self.pos += 1;
                    continue;
                }
                b'"' => {}
                b'}' => {
                    self.pos += 1;
                    return Ok(());
                }
                // Unreachable for serde_json-validated input; stop rather than spin.
                _ => return Ok(()),
            }
            let token = self.string_token();
            let name: String = serde_json::from_slice(token)?;
            self.skip_ws();
            self.pos += 1; // ':'
            if seen.contains(&name) {
                return Err(CanonError::DuplicateMember {
                    path: pointer(&self.path),
                    name,
                });
            }
            seen.insert(name.clone());
            self.path.push(Seg::Key(name));
            self.value()?;
            self.path.pop();
        }
    }

    fn array(&mut self) -> Result<(), CanonError> {
        self.pos += 1; // '['
        let mut index = 0;
        loop {
            self.skip_ws();
            match self.peek() {
                b',' => {
                    self.pos += 1;
                    continue;
                }
                b']' => {
                    self.pos += 1;
                    return Ok(());
                }
                0 => return Ok(()),
                _ => {}
            }
            self.path.push(Seg::Index(index));
            self.value()?;
            self.path.pop();
            index += 1;
        }
    }

    /// Skips a string token and returns it, quotes included.
    fn string_token(&mut self) -> &[u8] {
        let start = self.pos;
        self.pos += 1; // opening quote
        loop {
            match self.peek() {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    break;
                }
                0 if self.pos >= self.bytes.len() => break,
                _ => self.pos += 1,
            }
        }
        &self.bytes[start..self.pos.min(self.bytes.len())]
    }

    fn number(&mut self) {
        let start = self.pos;
        while matches!(self.peek(), b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.pos += 1;
        }
        let token = &self.bytes[start..self.pos];
        if token.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            return; // a float literal: any finite double is acceptable
        }
        let digits = token.strip_prefix(b"-").unwrap_or(token);
        // Judge the text, not serde_json's reading of it: beyond u64 serde_json
        // yields a (rounded) f64 and the integer would go unnoticed. 16 digits
        // always fit in u64, and MAX_SAFE_INTEGER has 16.
        let safe = digits.len() <= 16
            && std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse::<u64>().ok())
                .is_some_and(|m| is_safe(u128::from(m)));
        if !safe && self.first_big.is_none() {
            self.first_big = Some(CanonError::IntegerOutOfRange {
                path: pointer(&self.path),
                value: String::from_utf8_lossy(token).into_owned(),
            });
        }
    }
}

// ---------------------------------------------------------------------------
// Output side: a checking serializer that builds a `serde_json::Value`.
// ---------------------------------------------------------------------------

/// Serializer error: a `CanonError` whose path grows as it unwinds.
///
/// Private so that `CanonError` does not have to implement `serde::ser::Error`
/// as part of the public API.
#[derive(Debug)]
struct CheckError(CanonError);

impl CheckError {
    /// Prefixes the error's JSON pointer with one more (outer) step.
    fn within(mut self, seg: Seg) -> Self {
        if let CanonError::IntegerOutOfRange { path, .. }
        | CanonError::NonFiniteNumber { path }
        | CanonError::DuplicateMember { path, .. } = &mut self.0
        {
            path.insert_str(0, &seg.to_string());
        }
        self
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CheckError {}

impl ser::Error for CheckError {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        CheckError(CanonError::Json(<serde_json::Error as ser::Error>::custom(
            msg,
        )))
    }
}

impl From<serde_json::Error> for CheckError {
    fn from(e: serde_json::Error) -> Self {
        CheckError(CanonError::Json(e))
    }
}

fn out_of_range(value: impl ToString) -> CheckError {
    CheckError(CanonError::IntegerOutOfRange {
        path: String::new(),
        value: value.to_string(),
    })
}

/// Serializes a map key exactly as serde_json would (strings as-is, integers,
/// bools and chars stringified, anything else refused), by borrowing
/// serde_json's own map-key logic instead of re-implementing it.
fn map_key<K: Serialize + ?Sized>(key: &K) -> Result<String, CheckError> {
    let mut one = serde_json::value::Serializer.serialize_map(Some(1))?;
    one.serialize_key(key)?;
    one.serialize_value(&())?;
    match one.end()? {
        Value::Object(map) => map
            .into_iter()
            .next()
            .map(|(k, _)| k)
            .ok_or_else(|| <CheckError as ser::Error>::custom("map key vanished")),
        _ => Err(<CheckError as ser::Error>::custom(
            "map key did not serialize to an object",
        )),
    }
}

/// Inserts a member, refusing a name the object already has.
fn insert_unique(
    map: &mut Map<String, Value>,
    key: String,
    value: Value,
) -> Result<(), CheckError> {
    if map.contains_key(&key) {
        return Err(CheckError(CanonError::DuplicateMember {
            path: String::new(),
            name: key,
        }));
    }
    map.insert(key, value);
    Ok(())
}

/// Mirrors `serde_json::value::Serializer`, except that numbers are checked.
struct Checker;

fn check<T: Serialize + ?Sized>(value: &T, seg: impl FnOnce() -> Seg) -> Result<Value, CheckError> {
    value.serialize(Checker).map_err(|e| e.within(seg()))
}

impl ser::Serializer for Checker {
    type Ok = Value;
    type Error = CheckError;
    type SerializeSeq = SeqChecker;
    type SerializeTuple = SeqChecker;
    type SerializeTupleStruct = SeqChecker;
    type SerializeTupleVariant = SeqChecker;
    type SerializeMap = MapChecker;
    type SerializeStruct = MapChecker;
    type SerializeStructVariant = MapChecker;

    fn serialize_bool(self, v: bool) -> Result<Value, CheckError> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, CheckError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Value, CheckError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Value, CheckError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Value, CheckError> {
        self.serialize_i128(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<Value, CheckError> {
        if !is_safe(v.unsigned_abs()) {
            return Err(out_of_range(v));
        }
        // In the safe range, so both conversions succeed; keep non-negative
        // values as u64 like serde_json does.
        let n = match u64::try_from(v) {
            Ok(u) => Number::from(u),
            Err(_) => Number::from(i64::try_from(v).map_err(|_| out_of_range(v))?),
        };
        Ok(Value::Number(n))
    }
    fn serialize_u8(self, v: u8) -> Result<Value, CheckError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Value, CheckError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Value, CheckError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Value, CheckError> {
        self.serialize_u128(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<Value, CheckError> {
        if !is_safe(v) {
            return Err(out_of_range(v));
        }
        let u = u64::try_from(v).map_err(|_| out_of_range(v))?;
        Ok(Value::Number(u.into()))
    }
    fn serialize_f32(self, v: f32) -> Result<Value, CheckError> {
        // Exact widening: JCS is defined on doubles.
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<Value, CheckError> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| {
            CheckError(CanonError::NonFiniteNumber {
                path: String::new(),
            })
        })
    }
    fn serialize_char(self, v: char) -> Result<Value, CheckError> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, CheckError> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, CheckError> {
        Ok(Value::Array(v.iter().map(|&b| Value::from(b)).collect()))
    }
    fn serialize_none(self) -> Result<Value, CheckError> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, CheckError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, CheckError> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, CheckError> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, CheckError> {
        Ok(Value::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value, CheckError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, CheckError> {
        let inner = check(value, || Seg::Key(variant.to_owned()))?;
        let mut map = Map::new();
        map.insert(variant.to_owned(), inner);
        Ok(Value::Object(map))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqChecker, CheckError> {
        Ok(SeqChecker {
            variant: None,
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqChecker, CheckError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqChecker, CheckError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqChecker, CheckError> {
        Ok(SeqChecker {
            variant: Some(variant),
            items: Vec::with_capacity(len),
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapChecker, CheckError> {
        Ok(MapChecker {
            variant: None,
            map: Map::new(),
            next_key: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapChecker, CheckError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<MapChecker, CheckError> {
        Ok(MapChecker {
            variant: Some(variant),
            map: Map::new(),
            next_key: None,
        })
    }
}

/// Wraps `inner` as `{variant: inner}` (externally tagged enums), if tagged.
fn tag(variant: Option<&'static str>, inner: Value) -> Value {
    match variant {
        None => inner,
        Some(name) => {
            let mut map = Map::new();
            map.insert(name.to_owned(), inner);
            Value::Object(map)
        }
    }
}

/// Arrays, tuples and tuple variants.
struct SeqChecker {
    variant: Option<&'static str>,
    items: Vec<Value>,
}

impl SeqChecker {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        let index = self.items.len();
        let variant = self.variant;
        let item = value.serialize(Checker).map_err(|e| {
            let e = e.within(Seg::Index(index));
            match variant {
                Some(v) => e.within(Seg::Key(v.to_owned())),
                None => e,
            }
        })?;
        self.items.push(item);
        Ok(())
    }

    fn finish(self) -> Value {
        tag(self.variant, Value::Array(self.items))
    }
}

impl ser::SerializeSeq for SeqChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTuple for SeqChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleStruct for SeqChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

impl ser::SerializeTupleVariant for SeqChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

/// Maps, structs and struct variants.
struct MapChecker {
    variant: Option<&'static str>,
    map: Map<String, Value>,
    next_key: Option<String>,
}

impl MapChecker {
    /// Adds the prefix this object contributes to an error's pointer.
    fn here(&self, e: CheckError) -> CheckError {
        match self.variant {
            Some(v) => e.within(Seg::Key(v.to_owned())),
            None => e,
        }
    }

    fn member<T: Serialize + ?Sized>(&mut self, key: String, value: &T) -> Result<(), CheckError> {
        let item = value
            .serialize(Checker)
            .map_err(|e| self.here(e.within(Seg::Key(key.clone()))))?;
        insert_unique(&mut self.map, key, item).map_err(|e| self.here(e))
    }

    fn finish(self) -> Value {
        tag(self.variant, Value::Object(self.map))
    }
}

impl ser::SerializeMap for MapChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CheckError> {
        let key = map_key(key).map_err(|e| self.here(e))?;
        self.next_key = Some(key);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        let key = self.next_key.take().ok_or_else(|| {
            <CheckError as ser::Error>::custom("serialize_value called before serialize_key")
        })?;
        self.member(key, value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

impl ser::SerializeStruct for MapChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.member(key.to_owned(), value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

impl ser::SerializeStructVariant for MapChecker {
    type Ok = Value;
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.member(key.to_owned(), value)
    }
    fn end(self) -> Result<Value, CheckError> {
        Ok(self.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    /// The typed parse answers exactly what the full one answers: the same
    /// value for canonical bytes, the same error for everything else.
    #[test]
    fn from_canonical_typed_answers_what_from_canonical_answers() {
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct T {
            a: Option<String>,
            m: std::collections::BTreeMap<String, u64>,
            n: u64,
        }
        for (text, ok) in [
            (r#"{"a":"x","m":{"k":1,"l":2},"n":3}"#, true),
            (r#"{"a":null,"m":{},"n":0}"#, true),
            (r#"{"a":"\u00e9","m":{},"n":0}"#, false),
            (r#"{"a":"x", "m":{},"n":3}"#, false),
            (r#"{"m":{},"a":"x","n":3}"#, false),
            (r#"{"a":"x","m":{"k":1,"k":2},"n":3}"#, false),
            (r#"{"a":"x","a":"y","m":{},"n":3}"#, false),
            (r#"{"a":"x","m":{},"n":3,"z":1}"#, false),
            (r#"{"a":"x","m":{}}"#, false),
            (r#"{"a":"x","m":{},"n":9007199254740992}"#, false),
            (r#"{"a":"x","m":{},"n":18446744073709551616}"#, false),
            (r#"{"a":"x","m":{},"n":3.0}"#, false),
            ("not json", false),
        ] {
            let typed = from_canonical_typed::<T>(text.as_bytes());
            let full = from_canonical::<T>(text.as_bytes());
            assert_eq!(typed.is_ok(), ok, "{text}: {typed:?}");
            match (typed, full) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
                (a, b) => panic!("{text}: {a:?} against {b:?}"),
            }
        }
    }

    const SAFE: u64 = MAX_SAFE_INTEGER;
    const SAFE_I: i64 = MAX_SAFE_INTEGER as i64;

    fn canon<T: Serialize + ?Sized>(v: &T) -> String {
        String::from_utf8(to_canonical(v).expect("canonicalizes")).expect("UTF-8")
    }

    fn assert_out_of_range<T: std::fmt::Debug>(
        r: Result<T, CanonError>,
        want_path: &str,
        want_value: &str,
    ) {
        match r {
            Err(CanonError::IntegerOutOfRange { path, value }) => {
                assert_eq!(path, want_path, "path");
                assert_eq!(value, want_value, "value");
            }
            other => panic!("expected IntegerOutOfRange at {want_path:?}, got {other:?}"),
        }
    }

    fn assert_not_canonical<T: std::fmt::Debug>(r: Result<T, CanonError>, want_offset: usize) {
        match r {
            Err(CanonError::NotCanonical { offset }) => assert_eq!(offset, want_offset, "offset"),
            other => panic!("expected NotCanonical at {want_offset}, got {other:?}"),
        }
    }

    fn assert_duplicate<T: std::fmt::Debug>(
        r: Result<T, CanonError>,
        want_path: &str,
        want_name: &str,
    ) {
        match r {
            Err(CanonError::DuplicateMember { path, name }) => {
                assert_eq!(path, want_path, "path");
                assert_eq!(name, want_name, "name");
            }
            other => {
                panic!("expected DuplicateMember {want_name:?} at {want_path:?}, got {other:?}")
            }
        }
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outcome {
        duration_ms: u64,
        exit_code: i32,
        ok: bool,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        check: String,
        result: Outcome,
        tags: Vec<String>,
        ratio: f64,
        note: Option<String>,
        extra: BTreeMap<String, i64>,
    }

    fn body() -> Body {
        Body {
            check: "cargo test — ünïcode \"quoted\"\n".to_owned(),
            result: Outcome {
                duration_ms: SAFE,
                exit_code: -1,
                ok: false,
            },
            tags: vec!["b".to_owned(), "a".to_owned()],
            ratio: 0.5,
            note: None,
            extra: BTreeMap::from([("z".to_owned(), -SAFE_I), ("€".to_owned(), 0)]),
        }
    }

    // --- facts about the dependencies that this module exists to work around ---

    #[test]
    fn serde_jcs_alone_silently_rounds_big_integers() {
        // The reason for the range check: serde_jcs casts every integer to f64.
        assert_eq!(serde_jcs::to_vec(&(SAFE + 2)).unwrap(), b"9007199254740992");
        assert_eq!(
            serde_jcs::to_vec(&u64::MAX).unwrap(),
            b"18446744073709552000"
        );
    }

    #[test]
    fn serde_json_to_value_turns_nan_into_null() {
        // The reason the checks happen during serialization, not on a Value.
        assert_eq!(serde_json::to_value(f64::NAN).unwrap(), Value::Null);
    }

    #[test]
    fn serde_json_reads_integers_beyond_u64_as_floats() {
        // The reason the input range check reads the literal text.
        let v: Value = serde_json::from_str("18446744073709551616").unwrap();
        assert!(v.is_f64());
        let v: Value = serde_json::from_str("-9223372036854775809").unwrap();
        assert!(v.is_f64());
    }

    // --- to_canonical: integer range ---

    #[test]
    fn max_safe_integer_is_accepted_both_signs() {
        assert_eq!(canon(&SAFE), "9007199254740991");
        assert_eq!(canon(&-SAFE_I), "-9007199254740991");
        assert_eq!(canon(&i128::from(SAFE)), "9007199254740991");
        assert_eq!(canon(&-i128::from(SAFE)), "-9007199254740991");
    }

    #[test]
    fn two_pow_53_is_refused_both_signs() {
        assert_out_of_range(to_canonical(&(SAFE + 1)), "", "9007199254740992");
        assert_out_of_range(to_canonical(&(SAFE_I + 1)), "", "9007199254740992");
        assert_out_of_range(to_canonical(&(-SAFE_I - 1)), "", "-9007199254740992");
    }

    #[test]
    fn extreme_integers_are_refused() {
        assert_out_of_range(to_canonical(&u64::MAX), "", "18446744073709551615");
        assert_out_of_range(to_canonical(&i64::MIN), "", "-9223372036854775808");
        assert_out_of_range(to_canonical(&u128::MAX), "", &u128::MAX.to_string());
        assert_out_of_range(to_canonical(&i128::MIN), "", &i128::MIN.to_string());
    }

    #[test]
    fn out_of_range_integer_reports_json_pointer() {
        let mut b = body();
        b.result.duration_ms = SAFE + 1;
        assert_out_of_range(to_canonical(&b), "/result/duration_ms", "9007199254740992");

        let nested = BTreeMap::from([("a/b~c", vec![vec![0, 1], vec![2, i64::MIN]])]);
        assert_out_of_range(to_canonical(&nested), "/a~1b~0c/1/1", &i64::MIN.to_string());
    }

    #[test]
    fn enum_variants_contribute_to_the_pointer() {
        #[derive(Serialize)]
        enum E {
            New(u64),
            Tuple(u8, u64),
            Struct { n: u64 },
        }
        assert_out_of_range(
            to_canonical(&E::New(u64::MAX)),
            "/New",
            "18446744073709551615",
        );
        assert_out_of_range(
            to_canonical(&E::Tuple(0, u64::MAX)),
            "/Tuple/1",
            "18446744073709551615",
        );
        assert_out_of_range(
            to_canonical(&E::Struct { n: u64::MAX }),
            "/Struct/n",
            "18446744073709551615",
        );
        assert_eq!(canon(&E::Struct { n: 1 }), r#"{"Struct":{"n":1}}"#);
        assert_eq!(canon(&E::Tuple(1, 2)), r#"{"Tuple":[1,2]}"#);
    }

    // --- to_canonical: floats ---

    #[test]
    fn non_finite_floats_are_refused() {
        for f in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            match to_canonical(&f) {
                Err(CanonError::NonFiniteNumber { path }) => assert_eq!(path, ""),
                other => panic!("{f}: expected NonFiniteNumber, got {other:?}"),
            }
        }
        match to_canonical(&BTreeMap::from([("x", vec![1.0, f64::from(f32::NAN)])])) {
            Err(CanonError::NonFiniteNumber { path }) => assert_eq!(path, "/x/1"),
            other => panic!("expected NonFiniteNumber, got {other:?}"),
        }
        match to_canonical(&f32::INFINITY) {
            Err(CanonError::NonFiniteNumber { path }) => assert_eq!(path, ""),
            other => panic!("expected NonFiniteNumber, got {other:?}"),
        }
    }

    #[test]
    fn large_and_small_finite_floats_use_es6_form() {
        assert_eq!(canon(&1e300), "1e+300");
        assert_eq!(canon(&-1e-300), "-1e-300");
        assert_eq!(canon(&1e21), "1e+21");
        assert_eq!(canon(&-0.0_f64), "0");
        assert_eq!(canon(&1.0_f64), "1");
        assert_eq!(canon(&0.1_f32), "0.10000000149011612");
        assert_eq!(from_canonical::<f64>(b"1e+300").unwrap(), 1e300);
    }

    #[test]
    fn integral_floats_from_2_pow_53_to_1e21_do_not_round_trip() {
        // Documented asymmetry: a float is always written, but in ES6 form these
        // look like integer literals, which the reader refuses.
        let bytes = to_canonical(&9007199254740992.0_f64).unwrap();
        assert_eq!(bytes, b"9007199254740992");
        assert_out_of_range(from_canonical::<f64>(&bytes), "", "9007199254740992");
    }

    // --- to_canonical: structure ---

    #[test]
    fn serializer_refuses_duplicate_members() {
        #[derive(Serialize)]
        struct Inner {
            a: u8,
        }
        #[derive(Serialize)]
        struct Outer {
            a: u8,
            #[serde(flatten)]
            inner: Inner,
        }
        #[derive(Serialize)]
        struct Wrap {
            w: Outer,
        }
        let v = Wrap {
            w: Outer {
                a: 1,
                inner: Inner { a: 2 },
            },
        };
        assert_duplicate(to_canonical(&v), "/w", "a");
    }

    #[test]
    fn map_keys_follow_serde_json_and_sort_by_utf16() {
        let m = BTreeMap::from([(10u64, true), (9u64, false)]);
        assert_eq!(canon(&m), r#"{"10":true,"9":false}"#);
        // U+1F602 (surrogates D83D..) sorts before U+FB33 in UTF-16 but after it in UTF-8.
        let m = BTreeMap::from([("\u{fb33}", 1), ("\u{1f602}", 2)]);
        assert_eq!(canon(&m), "{\"\u{1f602}\":2,\"\u{fb33}\":1}");
        let bad = BTreeMap::from([(vec![1u8], 1)]);
        assert!(matches!(to_canonical(&bad), Err(CanonError::Json(_))));
    }

    #[test]
    fn round_trip_nested_struct() {
        let b = body();
        let bytes = to_canonical(&b).unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "{\"check\":\"cargo test — ünïcode \\\"quoted\\\"\\n\",\
             \"extra\":{\"z\":-9007199254740991,\"€\":0},\
             \"note\":null,\"ratio\":0.5,\
             \"result\":{\"duration_ms\":9007199254740991,\"exit_code\":-1,\"ok\":false},\
             \"tags\":[\"b\",\"a\"]}"
        );
        let back: Body = from_canonical(&bytes).unwrap();
        assert_eq!(back, b);
        assert_eq!(to_canonical(&back).unwrap(), bytes);
    }

    // --- from_canonical: rejections ---

    #[test]
    fn rejects_non_canonical_whitespace() {
        assert_not_canonical(from_canonical::<Value>(b"{\"a\": 1}"), 5);
        assert_not_canonical(from_canonical::<Value>(b" {\"a\":1}"), 0);
        // Trailing whitespace: canonical bytes are a strict prefix.
        assert_not_canonical(from_canonical::<Value>(b"{\"a\":1}\n"), 7);
    }

    #[test]
    fn rejects_unsorted_keys() {
        assert_not_canonical(from_canonical::<Value>(br#"{"b":1,"a":2}"#), 2);
        assert_not_canonical(from_canonical::<Value>(br#"{"x":{"b":1,"a":2}}"#), 7);
    }

    #[test]
    fn rejects_non_canonical_numbers() {
        assert_not_canonical(from_canonical::<Value>(b"[1.0]"), 2);
        assert_not_canonical(from_canonical::<Value>(b"1E3"), 1);
        assert_not_canonical(from_canonical::<Value>(b"-0"), 0);
        assert_eq!(
            from_canonical::<Value>(b"[1]").unwrap(),
            serde_json::json!([1])
        );
    }

    #[test]
    fn rejects_non_canonical_strings() {
        assert_not_canonical(from_canonical::<Value>(br#""\u0061""#), 1);
        assert_not_canonical(from_canonical::<Value>(br#""\/""#), 1);
    }

    #[test]
    fn rejects_duplicate_members() {
        assert_duplicate(from_canonical::<Value>(br#"{"a":1,"a":1}"#), "", "a");
        assert_duplicate(
            from_canonical::<Value>(br#"{"x":[{"b":1,"c":2,"b":3}]}"#),
            "/x/0",
            "b",
        );
        // Same name in different objects is fine (and this input is canonical).
        assert!(from_canonical::<Value>(br#"{"a":{"a":1},"b":{"a":2}}"#).is_ok());
    }

    #[test]
    fn rejects_duplicate_members_written_with_escapes() {
        assert_duplicate(from_canonical::<Value>(br#"{"a":1,"\u0061":2}"#), "", "a");
        assert_duplicate(
            from_canonical::<Value>(r#"{"k/~":{"\ud83d\ude02":1,"😂":2}}"#.as_bytes()),
            "/k~1~0",
            "😂",
        );
        assert_duplicate(canonicalize_json(br#"{"\n":1,"\u000a":2}"#), "", "\n");
    }

    #[test]
    fn rejects_out_of_range_integers() {
        assert_out_of_range(
            from_canonical::<Value>(br#"{"result":{"duration_ms":9007199254740992}}"#),
            "/result/duration_ms",
            "9007199254740992",
        );
        assert_out_of_range(
            from_canonical::<Value>(b"[-9007199254740992]"),
            "/0",
            "-9007199254740992",
        );
        // Beyond u64, which serde_json would have read as a float.
        assert_out_of_range(
            from_canonical::<Value>(b"18446744073709551616"),
            "",
            "18446744073709551616",
        );
        // Even the canonical spelling of 2^64 as a double.
        assert_out_of_range(
            from_canonical::<Value>(b"18446744073709552000"),
            "",
            "18446744073709552000",
        );
        assert_eq!(
            from_canonical::<i64>(b"-9007199254740991").unwrap(),
            -SAFE_I
        );
    }

    #[test]
    fn rejects_unknown_member() {
        let bytes = br#"{"duration_ms":1,"exit_code":0,"ok":true,"zzz":1}"#;
        match from_canonical::<Outcome>(bytes) {
            Err(CanonError::Json(e)) => {
                assert!(e.to_string().contains("unknown field `zzz`"), "{e}");
            }
            other => panic!("expected Json(unknown field), got {other:?}"),
        }
    }

    #[test]
    fn rejects_invalid_json_and_utf8() {
        for bad in [
            &b""[..],
            b"{",
            b"[1,]",
            b"\"\xff\"",
            b"\"\\ud800\"",
            b"1e400",
            b"NaN",
            b"\xef\xbb\xbf1",
        ] {
            match from_canonical::<Value>(bad) {
                Err(CanonError::Json(_)) => {}
                other => panic!(
                    "{:?}: expected Json error, got {other:?}",
                    String::from_utf8_lossy(bad)
                ),
            }
        }
    }

    #[test]
    fn checks_run_in_documented_order() {
        // Syntax error beats an earlier duplicate.
        assert!(matches!(
            from_canonical::<Value>(br#"{"a":1,"a":2,"#),
            Err(CanonError::Json(_))
        ));
        // A duplicate beats an earlier out-of-range integer.
        assert_duplicate(
            from_canonical::<Value>(br#"{"a":9007199254740992,"b":{"c":1,"c":1}}"#),
            "/b",
            "c",
        );
        // An out-of-range integer beats non-canonical layout.
        assert_out_of_range(
            from_canonical::<Value>(b"[ 1.0, 9007199254740993 ]"),
            "/1",
            "9007199254740993",
        );
        // Non-canonical beats a schema mismatch.
        assert_not_canonical(from_canonical::<Outcome>(br#"{"zzz": 1}"#), 7);
    }

    #[test]
    fn canonicalize_json_sorts_and_refuses_big_integers() {
        assert_eq!(
            canonicalize_json(b" { \"b\" : [ 1.50, 2e0 ], \"a\" : \"\\u00e9\" } ").unwrap(),
            "{\"a\":\"é\",\"b\":[1.5,2]}".as_bytes()
        );
        assert_out_of_range(
            canonicalize_json(b"[1e0, 18446744073709551616]"),
            "/1",
            "18446744073709551616",
        );
    }

    #[test]
    fn error_messages_name_the_problem() {
        let e = to_canonical(&BTreeMap::from([("n", u64::MAX)])).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("18446744073709551615") && msg.contains("\"/n\""),
            "{msg}"
        );
        let msg = from_canonical::<Value>(br#"{"a":1,"a":2}"#)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("document root"), "{msg}");
    }
}
