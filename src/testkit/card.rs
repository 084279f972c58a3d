//! [`CardJson`]: Agent Card JSON with defaults, as an agent serves it, for tests (no I/O).

use serde_json::{Map, Value, json};

/// An A2A 1.0 Agent Card as JSON, valid by default: name `Echo`, description `echo agent`,
/// version `1.0.0`, one JSON-RPC 1.0 interface at the URL given, empty `capabilities`,
/// `text/plain` in and out, and one skill `echo` (`Echo`, `echoes`, tag `demo`).
#[derive(Debug, Clone)]
pub struct CardJson(Map<String, Value>);

impl CardJson {
    /// The default card with its one interface at `url`.
    pub fn new(url: &str) -> CardJson {
        let Value::Object(card) = json!({
            "name": "Echo", "description": "echo agent", "version": "1.0.0",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": ["demo"]}]
        }) else {
            unreachable!("an object literal")
        };
        CardJson(card)
    }

    /// The card as a JSON value.
    pub fn build(self) -> Value {
        Value::Object(self.0)
    }

    /// The card as JSON text, as served.
    pub fn text(self) -> String {
        self.build().to_string()
    }

    /// Sets (or adds) a top-level member.
    pub fn set(mut self, key: &str, value: Value) -> Self {
        self.0.insert(key.to_owned(), value);
        self
    }

    /// The card's `name` and `description`.
    pub fn named(self, name: &str, description: &str) -> Self {
        self.set("name", json!(name))
            .set("description", json!(description))
    }

    /// The card's `version` (the agent's).
    pub fn version(self, version: &str) -> Self {
        self.set("version", json!(version))
    }

    /// The binding of the (first) interface, by wire name (`JSONRPC`, `HTTP+JSON`, `GRPC`).
    pub fn binding(mut self, binding: &str) -> Self {
        self.0["supportedInterfaces"][0]["protocolBinding"] = json!(binding);
        self
    }

    /// Sets one member of `capabilities` (`streaming`, `pushNotifications`, `extendedAgentCard`,
    /// `extensions`).
    pub fn capability(mut self, key: &str, value: Value) -> Self {
        self.0["capabilities"][key] = value;
        self
    }

    /// `capabilities.streaming`.
    pub fn streaming(self, on: bool) -> Self {
        self.capability("streaming", json!(on))
    }

    /// `capabilities.extendedAgentCard`.
    pub fn extended(self, on: bool) -> Self {
        self.capability("extendedAgentCard", json!(on))
    }

    /// The skills, replacing the default one.
    pub fn skills(self, skills: Value) -> Self {
        self.set("skills", skills)
    }
}
