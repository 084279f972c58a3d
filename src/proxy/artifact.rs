//! Checks the artifacts in an agent's answer against the integration's `artifact_schema` (pure).
//!
//! What is checked: every part carrying `data` (a JSON value, A2A 1.0 "Part") of
//! - a Task's `artifacts` (SendMessage `{"task":…}`, GetTask, CancelTask, each of ListTasks'
//!   `tasks`, a stream's `{"task":…}` event),
//! - a stream's `{"artifactUpdate":{"artifact":…}}` event (TaskArtifactUpdateEvent),
//! - an agent's direct `{"message":…}` answer (the agent's output when it answers without a
//!   task).
//!
//! A task's `history` and status messages are the conversation, not the output, and are not
//! checked. Text, raw and url parts are not either: a JSON Schema describes JSON values.
//!
//! An answer the gateway cannot read as JSON (malformed, nested deeper than serde_json reads,
//! numbers out of range) or that repeats an object key (the gateway would check one value and the
//! caller might read the other) cannot be shown to match, so it counts as a mismatch too. So does
//! one whose tree would take more than [`crate::json::TREE_BUDGET`] (`[0,0,…]` costs about 36
//! times its text): it is refused before the tree is built.

use std::borrow::Cow;

use serde_json::Value;

use crate::config::{ArtifactSchema, Mismatch};
use crate::profile::Binding;

/// Most duplicate keys looked for in one answer (one is enough to refuse it).
const DUPLICATE_SCAN_LIMIT: usize = 1;

/// Why an answer does not hold to the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A data part does not match.
    Part {
        /// Where the part is in the answer (`task.artifacts[0].parts[1]`), gateway-written.
        part: String,
        /// The first violation in the part's data.
        mismatch: Mismatch,
    },
    /// The answer cannot be read as JSON, repeats a key, or would take too much memory to read.
    Unreadable(Cow<'static, str>),
}

impl Violation {
    /// The schema keyword that failed, or what made the answer unreadable (bounded).
    pub fn keyword(&self) -> &str {
        match self {
            Violation::Part { mismatch, .. } => &mismatch.keyword,
            Violation::Unreadable(_) => "unreadable",
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::Part { part, mismatch } => write!(
                f,
                "{part}.data fails `{}` (schema {})",
                mismatch.keyword, mismatch.schema_at
            ),
            Violation::Unreadable(why) => write!(f, "answer not checked: {why}"),
        }
    }
}

/// What checking one answer found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checked {
    /// Data parts checked.
    pub parts: usize,
    /// The first violation, if any.
    pub violation: Option<Violation>,
}

/// Checks one answer body: a unary answer, or one SSE event's data. JSON-RPC answers are
/// envelopes (`result` is checked; an `error` has no artifacts); HTTP+JSON answers are the
/// result itself. `ok` says whether the HTTP status was a success (errors are not checked).
pub fn check_answer(schema: &ArtifactSchema, binding: Binding, ok: bool, body: &[u8]) -> Checked {
    if !ok {
        return Checked::default();
    }
    if let Err(e) = crate::json::check_tree(body) {
        return unreadable(e.to_string());
    }
    // Before the parse: the scan's key sets are not held beside the tree.
    let text = std::str::from_utf8(body).unwrap_or_default();
    if !matches!(crate::json::duplicate_keys(text, DUPLICATE_SCAN_LIMIT), Ok(d) if d.is_empty()) {
        return unreadable("an object key appears twice");
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return unreadable("not JSON the gateway can read"),
    };
    let result = match binding {
        Binding::JsonRpc => match value.get("result") {
            Some(r) => r,
            None => return Checked::default(),
        },
        Binding::HttpJson => &value,
        // No call is sent over gRPC yet (`profile::compile`); never reached.
        Binding::Grpc => return unreadable("a gRPC answer, which the gateway does not read yet"),
    };
    check_result(schema, result)
}

fn unreadable(why: impl Into<Cow<'static, str>>) -> Checked {
    Checked {
        parts: 0,
        violation: Some(Violation::Unreadable(why.into())),
    }
}

/// Checks the artifacts of one result value (a SendMessage/GetTask/CancelTask/ListTasks result
/// or a StreamResponse).
pub fn check_result(schema: &ArtifactSchema, result: &Value) -> Checked {
    let mut walk = Walk {
        schema,
        out: Checked::default(),
    };
    if let Some(t) = result.get("task") {
        walk.task(t, "task");
    }
    if let Some(m) = result.get("message") {
        walk.parts(m.get("parts"), "message.parts");
    }
    if let Some(a) = result.get("artifactUpdate").and_then(|u| u.get("artifact")) {
        walk.parts(a.get("parts"), "artifactUpdate.artifact.parts");
    }
    if let Some(tasks) = result.get("tasks").and_then(Value::as_array) {
        for (i, t) in tasks.iter().enumerate() {
            walk.task(t, &format!("tasks[{i}]"));
        }
    }
    // A bare Task (GetTask, CancelTask).
    if result.get("artifacts").is_some() {
        walk.task(result, "");
    }
    walk.out
}

struct Walk<'a> {
    schema: &'a ArtifactSchema,
    out: Checked,
}

impl Walk<'_> {
    fn task(&mut self, task: &Value, at: &str) {
        let Some(artifacts) = task.get("artifacts").and_then(Value::as_array) else {
            return;
        };
        let dot = if at.is_empty() { "" } else { "." };
        for (i, a) in artifacts.iter().enumerate() {
            self.parts(a.get("parts"), &format!("{at}{dot}artifacts[{i}].parts"));
        }
    }

    fn parts(&mut self, parts: Option<&Value>, at: &str) {
        let Some(parts) = parts.and_then(Value::as_array) else {
            return;
        };
        for (i, p) in parts.iter().enumerate() {
            if self.out.violation.is_some() {
                return;
            }
            let Some(data) = p.get("data") else {
                continue;
            };
            self.out.parts += 1;
            if let Some(mismatch) = self.schema.check(data) {
                self.out.violation = Some(Violation::Part {
                    part: format!("{at}[{i}]"),
                    mismatch,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::config::ArtifactPolicy;

    fn schema() -> ArtifactSchema {
        ArtifactSchema::from_bytes(
            Path::new("quote.json"),
            br#"{"type":"object","required":["price"],"properties":{"price":{"type":"number"}}}"#,
            ArtifactPolicy::Record,
        )
        .unwrap()
    }

    fn artifact(data: Value) -> Value {
        json!({"artifactId": "a", "parts": [{"text": "t"}, {"data": data, "mediaType": "application/json"}]})
    }

    fn task(data: Value) -> Value {
        json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "artifacts": [artifact(data)],
               "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"no": "price"}}]}]})
    }

    fn part_at(c: &Checked) -> Option<&str> {
        match &c.violation {
            Some(Violation::Part { part, .. }) => Some(part),
            _ => None,
        }
    }

    /// Every place artifacts live, good and bad, for both bindings.
    #[test]
    fn every_answer_shape_is_checked_where_its_artifacts_are() {
        let good = json!({"price": 1});
        let bad = json!({"price": "1"});
        let cases = [
            (
                json!({"task": task(good.clone())}),
                json!({"task": task(bad.clone())}),
                "task.artifacts[0].parts[1]",
            ),
            (
                task(good.clone()),
                task(bad.clone()),
                "artifacts[0].parts[1]",
            ),
            (
                json!({"tasks": [task(good.clone()), task(good.clone())], "nextPageToken": ""}),
                json!({"tasks": [task(good.clone()), task(bad.clone())], "nextPageToken": ""}),
                "tasks[1].artifacts[0].parts[1]",
            ),
            (
                json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": artifact(good.clone())}}),
                json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": artifact(bad.clone())}}),
                "artifactUpdate.artifact.parts[1]",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"data": good.clone()}]}}),
                json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"data": bad.clone()}]}}),
                "message.parts[0]",
            ),
        ];
        let s = schema();
        for (ok, not, at) in cases {
            let rest =
                |v: &Value| check_answer(&s, Binding::HttpJson, true, v.to_string().as_bytes());
            let rpc = |v: &Value| {
                let env = json!({"jsonrpc": "2.0", "id": 1, "result": v});
                check_answer(&s, Binding::JsonRpc, true, env.to_string().as_bytes())
            };
            for check in [&rest as &dyn Fn(&Value) -> Checked, &rpc] {
                let c = check(&ok);
                assert_eq!(c.violation, None, "{at}: {ok}");
                assert!(c.parts >= 1, "{at}");
                let c = check(&not);
                assert_eq!(part_at(&c), Some(at), "{not}");
                assert_eq!(c.violation.as_ref().unwrap().keyword(), "type");
            }
        }
    }

    #[test]
    fn the_violation_line_names_the_part_the_pointer_and_the_keyword() {
        let c = check_result(&schema(), &json!({"task": task(json!({"price": "x"}))}));
        assert_eq!(
            c.violation.unwrap().to_string(),
            "task.artifacts[0].parts[1].data fails `type` (schema /properties/price/type)"
        );
    }

    #[test]
    fn status_updates_history_errors_and_other_parts_are_not_checked() {
        let s = schema();
        let status = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING",
            "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"data": {}}]}}}});
        assert_eq!(check_result(&s, &status), Checked::default());
        // The history of `task()` holds a data part without a price: not checked.
        assert_eq!(check_result(&s, &task(json!({"price": 2}))).parts, 1);
        let err = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "x"}});
        assert_eq!(
            check_answer(&s, Binding::JsonRpc, true, err.to_string().as_bytes()),
            Checked::default()
        );
        assert_eq!(
            check_answer(&s, Binding::HttpJson, false, b"<html>"),
            Checked::default()
        );
        let texts = json!({"task": {"id": "t", "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}, {"url": "u"}]}]}});
        assert_eq!(check_result(&s, &texts), Checked::default());
    }

    #[test]
    fn answers_that_cannot_be_read_are_violations() {
        let s = schema();
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let deep = format!(
            r#"{{"task":{{"id":"t","artifacts":[{{"artifactId":"a","parts":[{{"data":{deep}}}]}}]}}}}"#
        );
        for body in [
            b"not json".to_vec(),
            deep.into_bytes(),
            br#"{"task":{"id":"t","artifacts":[{"artifactId":"a","parts":[{"data":{"price":1e400}}]}]}}"#.to_vec(),
            br#"{"task":{"id":"t","artifacts":[{"artifactId":"a","parts":[{"data":{"price":1,"price":"x"}}]}]}}"#.to_vec(),
        ] {
            let c = check_answer(&s, Binding::HttpJson, true, &body);
            assert!(
                matches!(c.violation, Some(Violation::Unreadable(_))),
                "{}: {c:?}",
                String::from_utf8_lossy(&body[..body.len().min(60)])
            );
        }
    }

    #[test]
    fn an_answer_whose_tree_is_over_the_budget_is_unreadable_naming_its_size() {
        let s = schema();
        // 2^20 + 1 zeros in a data part: a few MiB of text, a `Vec<Value>` of 2^21 slots.
        let zeros = format!("[{}0]", "0,".repeat(1 << 20));
        let body = format!(
            r#"{{"task":{{"id":"t","artifacts":[{{"artifactId":"a","parts":[{{"data":{zeros}}}]}}]}}}}"#
        );
        let c = check_answer(&s, Binding::HttpJson, true, body.as_bytes());
        let Some(Violation::Unreadable(why)) = &c.violation else {
            panic!("{c:?}");
        };
        assert!(
            why.starts_with("the agent's answer would take ")
                && why.ends_with(" MiB to read, over the 64 MiB the gateway holds per answer"),
            "{why}"
        );
        assert_eq!(
            c.violation.as_ref().map(Violation::keyword),
            Some("unreadable")
        );
    }

    #[test]
    fn checking_stops_at_the_first_violation() {
        let s = schema();
        let many: Vec<Value> = (0..1000).map(|_| json!({"data": {}})).collect();
        let t = json!({"task": {"id": "t", "artifacts": [{"artifactId": "a", "parts": many}]}});
        let c = check_result(&s, &t);
        assert_eq!(
            (c.parts, part_at(&c)),
            (1, Some("task.artifacts[0].parts[0]"))
        );
    }
}
