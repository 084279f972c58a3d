//! Protobuf messages of the A2A 1.0 gRPC binding as a gRPC agent sends them (the official
//! generated types of `a2a-pb`), for the gRPC translation's tests and benches (no I/O).

use a2a_pb::protojson as pb;

/// A text part.
pub fn text_part(t: &str) -> pb::Part {
    pb::Part {
        content: Some(pb::part::Content::Text(t.into())),
        ..Default::default()
    }
}

/// Task `t-1` of context `c-1`, completed; with `artifact`, one artifact `a-1` named `echo` of
/// that text and the user's message `m-1` ("hi") as its history.
pub fn completed_task(artifact: Option<&str>) -> pb::Task {
    let mut task = pb::Task {
        id: "t-1".into(),
        context_id: "c-1".into(),
        status: Some(pb::TaskStatus {
            state: pb::TaskState::Completed as i32,
            ..Default::default()
        }),
        ..Default::default()
    };
    if let Some(text) = artifact {
        task.artifacts = vec![pb::Artifact {
            artifact_id: "a-1".into(),
            name: "echo".into(),
            parts: vec![text_part(text)],
            ..Default::default()
        }];
        task.history = vec![pb::Message {
            message_id: "m-1".into(),
            role: pb::Role::User as i32,
            context_id: "c-1".into(),
            task_id: "t-1".into(),
            parts: vec![text_part("hi")],
            ..Default::default()
        }];
    }
    task
}

/// The `SendMessageResponse` of `task`.
pub fn send_response(task: pb::Task) -> pb::SendMessageResponse {
    pb::SendMessageResponse {
        payload: Some(pb::send_message_response::Payload::Task(task)),
    }
}
