//! The members of an agent's answer that [`super::agent_error`] and [`super::send_succeeded`]
//! read, found in one pass over the text without building a tree (pure, no I/O).
//!
//! Why not `serde_json::Value`: a tree costs up to ~55 times its text and an answer is read up
//! to 16 MiB, while these checks need two flags, one integer and one short string. The pass
//! still reads every value as `Value` would, through serde_json's own `deserialize_any` (the
//! same number range, depth limit, string and UTF-8 checks), so an answer `Value` refused is
//! refused here too; of an object member that appears twice the last counts, as in `Value`.
//! Nothing is kept but what is asked for: keys are compared as serde_json hands them over
//! (unescaped), never stored.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// What the pass found in an answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Answer {
    /// Whether the answer is a JSON object (`Value::get` finds members only in one).
    pub object: bool,
    /// Whether it has a `result` member (`null` included, as `Value::get` finds it).
    pub result: bool,
    /// Its `error` member, of any type (`null` included).
    pub error: Option<ErrorFound>,
}

/// What the pass read of an `error` member.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct ErrorFound {
    /// `code`, when it is an integer an `i64` holds (`Value::as_i64`).
    pub code: Option<i64>,
    /// The first string `reason` among the objects of the `list` array (see [`read`]).
    pub reason: Option<String>,
}

/// Reads `body` as JSON; `list` names the error's member holding the `ErrorInfo`s (`data` in
/// JSON-RPC, `details` in a `google.rpc.Status`). `None` when `body` is not JSON `Value` reads.
pub(super) fn read(body: &[u8], list: &'static str) -> Option<Answer> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let got = Want::Top(list).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(match got {
        Got::Top(a) => a,
        _ => Answer::default(),
    })
}

/// What to take from the value being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// The answer: its `result` and `error` members.
    Top(&'static str),
    /// An `error`: its `code` and the `ErrorInfo` list named here.
    Error(&'static str),
    /// The `ErrorInfo` list: the first string `reason` of its objects.
    Reasons,
    /// One `ErrorInfo`: its `reason`, when a string.
    ReasonOf,
    /// An integer.
    Int,
    /// A string.
    Str,
    /// Nothing: the value is only read.
    Nothing,
}

/// What was taken.
enum Got {
    Top(Answer),
    Error(ErrorFound),
    Reason(Option<String>),
    Int(i64),
    Str(String),
    Nothing,
}

impl<'de> DeserializeSeed<'de> for Want {
    type Value = Got;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Got, D::Error> {
        d.deserialize_any(self)
    }
}

/// The members [`Want`] looks for, by key.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<&'static str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(["result", "error", "code", "data", "details", "reason"]
            .into_iter()
            .find(|k| *k == v))
    }
}

impl Want {
    /// The member `key` of an object read as `self`, and what to take from its value.
    fn member(self, key: Option<&'static str>) -> Want {
        match (self, key) {
            (Want::Top(_), Some("result")) => Want::Nothing,
            (Want::Top(list), Some("error")) => Want::Error(list),
            (Want::Error(_), Some("code")) => Want::Int,
            (Want::Error(list), Some(k)) if k == list => Want::Reasons,
            (Want::ReasonOf, Some("reason")) => Want::Str,
            _ => Want::Nothing,
        }
    }
}

impl<'de> Visitor<'de> for Want {
    type Value = Got;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Got, E> {
        Ok(Got::Nothing)
    }
    fn visit_i64<E>(self, v: i64) -> Result<Got, E> {
        Ok(if self == Want::Int {
            Got::Int(v)
        } else {
            Got::Nothing
        })
    }
    fn visit_u64<E>(self, v: u64) -> Result<Got, E> {
        Ok(match i64::try_from(v) {
            Ok(v) if self == Want::Int => Got::Int(v),
            _ => Got::Nothing,
        })
    }
    fn visit_f64<E>(self, _: f64) -> Result<Got, E> {
        Ok(Got::Nothing)
    }
    fn visit_str<E>(self, v: &str) -> Result<Got, E> {
        Ok(if self == Want::Str {
            Got::Str(v.to_owned())
        } else {
            Got::Nothing
        })
    }
    fn visit_unit<E>(self) -> Result<Got, E> {
        Ok(Got::Nothing)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Got, A::Error> {
        let mut first = None;
        // Every element is read (the answer must be JSON throughout); reasons until one is found.
        loop {
            let want = if self == Want::Reasons && first.is_none() {
                Want::ReasonOf
            } else {
                Want::Nothing
            };
            match seq.next_element_seed(want)? {
                None => break,
                Some(Got::Reason(r)) => first = r,
                Some(_) => {}
            }
        }
        Ok(if self == Want::Reasons {
            Got::Reason(first)
        } else {
            Got::Nothing
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Got, A::Error> {
        let mut answer = Answer {
            object: true,
            ..Answer::default()
        };
        let mut error = ErrorFound::default();
        let mut reason = None;
        while let Some(key) = map.next_key_seed(Key)? {
            let got = map.next_value_seed(self.member(key))?;
            // The last of a key that appears twice counts, whatever it holds.
            match (self, key) {
                (Want::Top(_), Some("result")) => answer.result = true,
                (Want::Top(_), Some("error")) => {
                    answer.error = Some(match got {
                        Got::Error(e) => e,
                        _ => ErrorFound::default(),
                    });
                }
                (Want::Error(_), Some("code")) => {
                    error.code = if let Got::Int(c) = got { Some(c) } else { None };
                }
                (Want::Error(list), Some(k)) if k == list => {
                    error.reason = if let Got::Reason(r) = got { r } else { None };
                }
                (Want::ReasonOf, Some("reason")) => {
                    reason = if let Got::Str(s) = got { Some(s) } else { None };
                }
                _ => {}
            }
        }
        Ok(match self {
            Want::Top(_) => Got::Top(answer),
            Want::Error(_) => Got::Error(error),
            Want::ReasonOf => Got::Reason(reason),
            _ => Got::Nothing,
        })
    }
}
