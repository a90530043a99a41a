//! The value model: what Python's `json` module builds, with the two Python
//! features serde_json's model lacks — strings that hold lone surrogates and
//! integers of arbitrary precision.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

/// A Python `str` decoded from JSON, stored as WTF-8: UTF-8 that may also
/// hold surrogate code points (`"\ud800"` is legal JSON and Python keeps it).
///
/// Byte order of WTF-8 equals code point order, so sorting by bytes sorts
/// the way Python's `sort_keys=True` does.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PyString(Box<[u8]>);

impl PyString {
    /// Wraps WTF-8 bytes produced by the parser.
    pub(crate) fn from_wtf8(bytes: Vec<u8>) -> Self {
        PyString(bytes.into_boxed_slice())
    }

    /// The WTF-8 bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text, when it holds no lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The text for display; a lone surrogate shows as U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    /// The number of code points, as Python's `len(str)` counts them (for
    /// the parser's tests).
    #[cfg(test)]
    pub fn char_len(&self) -> usize {
        // WTF-8 lead bytes are exactly the bytes that are not 10xxxxxx.
        self.0.iter().filter(|&&b| b & 0xC0 != 0x80).count()
    }

    /// Iterates the code points (surrogates included) as `u32`.
    pub fn code_points(&self) -> impl Iterator<Item = u32> + '_ {
        let bytes = &self.0;
        let mut i = 0;
        std::iter::from_fn(move || {
            let b0 = *bytes.get(i)? as u32;
            let (len, init) = match b0 {
                0x00..=0x7F => (1, b0),
                0xC0..=0xDF => (2, b0 & 0x1F),
                0xE0..=0xEF => (3, b0 & 0x0F),
                _ => (4, b0 & 0x07),
            };
            let mut cp = init;
            for k in 1..len {
                cp = (cp << 6) | (bytes[i + k] as u32 & 0x3F);
            }
            i += len;
            Some(cp)
        })
    }
}

impl From<&str> for PyString {
    fn from(s: &str) -> Self {
        PyString(s.as_bytes().into())
    }
}

impl PartialEq<str> for PyString {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other.as_bytes()
    }
}

impl fmt::Debug for PyString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string_lossy())
    }
}

/// A Python `int`: machine-sized when it fits, arbitrary precision otherwise.
/// Always normalised, so `Big` never holds a value that fits in `i64`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum PyInt {
    /// A value that fits in `i64`.
    Small(i64),
    /// Any other value (boxed: rare, and it keeps the type small).
    Big(Box<BigInt>),
}

impl PyInt {
    /// Normalises a big integer.
    pub fn from_big(value: BigInt) -> Self {
        match value.to_i64() {
            Some(small) => PyInt::Small(small),
            None => PyInt::Big(Box::new(value)),
        }
    }

    /// The sign test Python code writes as `value < 0`.
    pub fn is_negative(&self) -> bool {
        match self {
            PyInt::Small(v) => *v < 0,
            PyInt::Big(v) => v.is_negative(),
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        match self {
            PyInt::Small(v) => *v == 0,
            PyInt::Big(v) => v.is_zero(),
        }
    }

    /// The value as `u64` when it fits.
    pub fn to_u64(&self) -> Option<u64> {
        match self {
            PyInt::Small(v) => u64::try_from(*v).ok(),
            PyInt::Big(v) => v.to_u64(),
        }
    }

    /// Python's `max(floor, value)` for a small floor.
    pub fn max_with(self, floor: i64) -> PyInt {
        if self < PyInt::Small(floor) {
            PyInt::Small(floor)
        } else {
            self
        }
    }
}

impl std::ops::Add for PyInt {
    type Output = PyInt;

    fn add(self, other: PyInt) -> PyInt {
        match (&self, &other) {
            (PyInt::Small(a), PyInt::Small(b)) => match a.checked_add(*b) {
                Some(sum) => PyInt::Small(sum),
                None => PyInt::from_big(BigInt::from(*a) + BigInt::from(*b)),
            },
            _ => PyInt::from_big(self.into_big() + other.into_big()),
        }
    }
}

impl PyInt {
    fn into_big(self) -> BigInt {
        match self {
            PyInt::Small(v) => BigInt::from(v),
            PyInt::Big(v) => *v,
        }
    }
}

impl Default for PyInt {
    fn default() -> Self {
        PyInt::Small(0)
    }
}

impl From<i64> for PyInt {
    fn from(v: i64) -> Self {
        PyInt::Small(v)
    }
}

impl Ord for PyInt {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PyInt::Small(a), PyInt::Small(b)) => a.cmp(b),
            (PyInt::Small(a), PyInt::Big(b)) => BigInt::from(*a).cmp(b.as_ref()),
            (PyInt::Big(a), PyInt::Small(b)) => a.as_ref().cmp(&BigInt::from(*b)),
            (PyInt::Big(a), PyInt::Big(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for PyInt {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for PyInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PyInt::Small(v) => write!(f, "{v}"),
            PyInt::Big(v) => write!(f, "{v}"),
        }
    }
}

impl fmt::Debug for PyInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for PyInt {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PyInt::Small(v) => serializer.serialize_i64(*v),
            PyInt::Big(v) => {
                // A JSON number of any length; serde_json writes it verbatim.
                let raw = serde_json::value::RawValue::from_string(v.to_string())
                    .map_err(serde::ser::Error::custom)?;
                raw.serialize(serializer)
            }
        }
    }
}

/// A JSON object as Python's `dict` holds it: members in first-insertion
/// order, keys unique. (With duplicates allowed, a repeated key keeps its
/// first position and takes the last value, as `dict` assignment does.)
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Object(pub(crate) Vec<(PyString, Value)>);

impl Object {
    /// The value of a member, as `dict.get(key)`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The members in insertion order.
    pub fn members(&self) -> &[(PyString, Value)] {
        &self.0
    }

    /// Builds an object from members whose keys are unique.
    pub fn from_members(members: Vec<(PyString, Value)>) -> Self {
        Object(members)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the object has no members.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A parsed JSON value.
#[derive(Clone, PartialEq, Debug)]
pub enum Value {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal (no fraction, no exponent).
    Int(PyInt),
    /// A number with a fraction or an exponent, or a non-finite constant.
    Float(f64),
    /// A string.
    Str(PyString),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Object),
}

impl Value {
    /// The object, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The string, if this is one (for the parser's tests).
    #[cfg(test)]
    pub fn as_pystr(&self) -> Option<&PyString> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python's type name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}
