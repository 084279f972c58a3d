//! The proto field name of a ProtoJSON member name (pure, no I/O): `taskId` → `task_id`.
//! ProtoJSON readers take both spellings; the card validator names the proto one when a card
//! used it, and the binding translator reads it where the JSON name is absent.

/// `json_name` (lowerCamelCase) as its proto field name (snake_case); the same text when it has
/// no upper-case letter.
pub fn proto_field_name(json_name: &str) -> String {
    let mut snake = String::with_capacity(json_name.len() + 4);
    for c in json_name.chars() {
        if c.is_ascii_uppercase() {
            snake.push('_');
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    snake
}

#[cfg(test)]
mod tests {
    #[test]
    fn camel_becomes_snake() {
        assert_eq!(
            super::proto_field_name("statusTimestampAfter"),
            "status_timestamp_after"
        );
        assert_eq!(super::proto_field_name("id"), "id");
    }
}
