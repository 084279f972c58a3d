//! The config file's JSON Schema (`schemas/config.schema.json`) applied to TOML text, so every
//! config the tests start a gateway with is also checked against the schema editors use (file I/O:
//! the committed schema, read once).

use std::sync::LazyLock;

use serde_json::Value;

/// The committed schema, compiled once.
static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let path = super::repo_root().join("schemas/config.schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the committed schema is JSON");
    jsonschema::validator_for(&schema).expect("the committed schema compiles")
});

/// `text` (TOML) as the JSON value the schema is about.
pub fn toml_to_json(text: &str) -> Value {
    let v: toml::Value = toml::from_str(text).unwrap_or_else(|e| panic!("not TOML: {e}\n{text}"));
    serde_json::to_value(v).expect("TOML values are JSON values")
}

/// Every schema error of the config `text`, one line each (empty when it is valid).
pub fn schema_errors(text: &str) -> Vec<String> {
    let json = toml_to_json(text);
    VALIDATOR
        .iter_errors(&json)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Panics, listing the errors, unless the config `text` matches the schema.
pub fn assert_matches_schema(text: &str, what: &str) {
    let errors = schema_errors(text);
    assert!(
        errors.is_empty(),
        "{what} does not match schemas/config.schema.json:\n  {}\n{text}",
        errors.join("\n  ")
    );
}
