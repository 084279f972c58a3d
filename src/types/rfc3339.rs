//! Serialising `SystemTime` as an RFC 3339 UTC string with milliseconds (`2026-12-01T12:34:56.789Z`)
//! for every time the admin API shows, instead of serde's `{secs_since_epoch, nanos_since_epoch}`
//! (pure, no I/O). Use as `#[serde(serialize_with = "crate::types::rfc3339::serialize")]`, or
//! `crate::types::rfc3339::option::serialize` for an `Option<SystemTime>`.

use std::time::SystemTime;

use serde::Serializer;

/// `t` as RFC 3339 in UTC with milliseconds.
pub fn format(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Serialises `t` as [`format()`] does.
pub fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(*t))
}

/// The same for an optional time (`null` when absent).
pub mod option {
    use std::time::SystemTime;

    use serde::Serializer;

    /// Serialises `Some(t)` as [`super::format`] does, `None` as `null`.
    pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::format(*t)),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_128_496_789);
        assert_eq!(format(t), "2026-12-01T12:34:56.789Z");
        assert_eq!(format(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        #[derive(serde::Serialize)]
        struct Shown {
            #[serde(serialize_with = "serialize")]
            at: SystemTime,
            #[serde(serialize_with = "option::serialize")]
            seen: Option<SystemTime>,
            #[serde(serialize_with = "option::serialize")]
            never: Option<SystemTime>,
        }
        let v = serde_json::to_value(Shown {
            at: t,
            seen: Some(t),
            never: None,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"at": "2026-12-01T12:34:56.789Z",
                "seen": "2026-12-01T12:34:56.789Z", "never": null})
        );
    }
}
