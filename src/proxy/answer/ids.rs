//! The task and context ids an A2A answer names (pure, no I/O), read in the same pass that holds
//! the answer to being JSON ([`super::check_event`]): no second parse of the body for them.
//!
//! Read leniently: any JSON value is accepted (a value that is not an object names no ids), so
//! reading them changes nothing of what passes. An object names its task by `taskId`, else `id`
//! (a Task's own id), and its context by `contextId`; the 1.0 wrappers of a SendMessage answer
//! or stream event (`task`, `message`, `statusUpdate`, `artifactUpdate`) are looked into when
//! the object names none itself.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The ids an answer names, borrowed from its body where it has no escapes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TaskIds<'a> {
    /// The task's id.
    pub task: Option<Cow<'a, str>>,
    /// The context's id.
    pub context: Option<Cow<'a, str>>,
}

impl TaskIds<'_> {
    /// Whether no id was found.
    pub fn is_empty(&self) -> bool {
        self.task.is_none() && self.context.is_none()
    }
}

/// The members read; any other is skipped unparsed.
enum Member {
    Id,
    TaskId,
    ContextId,
    Wrapper,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, k: &str) -> Result<Member, E> {
                Ok(match k {
                    "id" => Member::Id,
                    "taskId" => Member::TaskId,
                    "contextId" => Member::ContextId,
                    "task" | "message" | "statusUpdate" | "artifactUpdate" => Member::Wrapper,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A member's value when it is a string; `None` for any other JSON value (skipped).
struct Text<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Lenient(|s: Cow<'de, str>| Text(Some(s)), || Text(None)))
    }
}

impl<'de> Deserialize<'de> for TaskIds<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Ids)
    }
}

/// Any JSON value: a string goes to the first function, anything else (skipped) to the second.
struct Lenient<S, N>(S, N);

impl<'de, T, S: FnOnce(Cow<'de, str>) -> T, N: FnOnce() -> T> Visitor<'de> for Lenient<S, N> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
        Ok((self.0)(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        Ok((self.0)(Cow::Owned(v)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Ok((self.1)())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        Ok((self.1)())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
        Ok((self.1)())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Ok((self.1)())
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok((self.1)())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok((self.1)())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((self.1)())
    }
}

/// The visitor of [`TaskIds`]: an object's own ids, else its wrapper's; nothing from any other
/// value.
struct Ids;

impl<'de> Visitor<'de> for Ids {
    type Value = TaskIds<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TaskIds<'de>, A::Error> {
        let (mut id, mut task, mut context, mut inner) = (None, None, None, TaskIds::default());
        while let Some(k) = map.next_key::<Member>()? {
            match k {
                Member::Id => id = map.next_value::<Text<'de>>()?.0,
                Member::TaskId => task = map.next_value::<Text<'de>>()?.0,
                Member::ContextId => context = map.next_value::<Text<'de>>()?.0,
                Member::Wrapper => {
                    let got = map.next_value::<TaskIds<'de>>()?;
                    if inner.is_empty() {
                        inner = got;
                    }
                }
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let own = TaskIds {
            task: task.or(id),
            context,
        };
        Ok(if own.is_empty() { inner } else { own })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TaskIds<'de>, A::Error> {
        Lenient(|_| TaskIds::default(), TaskIds::default).visit_seq(seq)
    }
    fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
    fn visit_unit<E: de::Error>(self) -> Result<TaskIds<'de>, E> {
        Ok(TaskIds::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(json: &str) -> (Option<String>, Option<String>) {
        let got: TaskIds<'_> = serde_json::from_str(json).unwrap();
        (
            got.task.map(Cow::into_owned),
            got.context.map(Cow::into_owned),
        )
    }

    fn both(t: &str, c: &str) -> (Option<String>, Option<String>) {
        (Some(t.to_owned()), Some(c.to_owned()))
    }

    #[test]
    fn a_task_a_message_and_the_1_0_wrappers_name_their_ids() {
        let task = r#"{"id":"t1","contextId":"c1","status":{"state":"completed",
            "message":{"taskId":"other","contextId":"other"}},"history":[{"taskId":"x"}]}"#;
        assert_eq!(ids(task), both("t1", "c1"));
        assert_eq!(ids(&format!(r#"{{"task":{task}}}"#)), both("t1", "c1"));
        let msg = r#"{"message":{"messageId":"m","taskId":"t2","contextId":"c2","parts":[]}}"#;
        assert_eq!(ids(msg), both("t2", "c2"));
        let up = r#"{"statusUpdate":{"taskId":"t3","contextId":"c3","status":{}}}"#;
        assert_eq!(ids(up), both("t3", "c3"));
        // 0.3: the event itself, `kind` beside it; an escaped id is read unescaped.
        let v03 = r#"{"kind":"status-update","taskId":"t\"4","contextId":"c4"}"#;
        assert_eq!(ids(v03), both("t\"4", "c4"));
    }

    #[test]
    fn other_values_name_nothing_and_are_still_read_whole() {
        for json in [
            "null",
            "[1,{\"id\":\"x\"}]",
            "\"s\"",
            "3",
            "true",
            r#"{"id":5}"#,
        ] {
            assert_eq!(ids(json), (None, None), "{json}");
        }
        assert!(serde_json::from_str::<TaskIds<'_>>(r#"{"id":"t","#).is_err());
        assert!(serde_json::from_str::<TaskIds<'_>>(r#"{"a":[1,}"#).is_err());
    }
}
