//! Last-resort containment of a panic in the card commands (no I/O): `validate`/`compile` must
//! answer every input with an exit code that means something, never Rust's 101.
//!
//! The validator is written not to panic on any input; this guard exists for the bug that slips
//! through. A process-wide panic hook is installed once; it stays silent and records the panic
//! (location and message, on one line) only on a thread that is inside [`contain`], and defers to
//! the previous hook everywhere else, so other threads (and tests) keep their usual output.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// Longest panic description kept, in characters (it may quote a hostile card).
const MAX_DESCRIPTION_CHARS: usize = 300;

/// A panic caught by [`contain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Panicked {
    /// `file:line:col: message`, one line of printable text (controls and non-ASCII escaped).
    pub description: String,
}

thread_local! {
    /// `Some` while this thread is inside [`contain`]; the hook fills in the description.
    static CAPTURE: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let captured = CAPTURE
                .try_with(|c| match c.try_borrow_mut() {
                    Ok(mut slot) => match slot.as_mut() {
                        Some(d) => {
                            *d = Some(describe(info));
                            true
                        }
                        None => false,
                    },
                    Err(_) => false,
                })
                .unwrap_or(false);
            if !captured {
                previous(info);
            }
        }));
    });
}

fn describe(info: &panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    let text = match info.location() {
        Some(l) => format!("{}:{}:{}: {message}", l.file(), l.line(), l.column()),
        None => message.to_owned(),
    };
    one_line(&text)
}

/// Printable ASCII kept; everything else escaped; cut with `…`.
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_DESCRIPTION_CHARS + 8));
    for (n, c) in text.chars().enumerate() {
        if n == MAX_DESCRIPTION_CHARS {
            out.push('…');
            break;
        }
        if matches!(c, ' '..='~') {
            out.push(c);
        } else {
            out.extend(c.escape_unicode());
        }
    }
    out
}

/// Runs `f`; a panic inside it becomes `Err(Panicked)` instead of unwinding further, and prints
/// nothing (the caller reports it).
pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    install_hook();
    let outer = CAPTURE.with(|c| c.replace(Some(None)));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    let captured = CAPTURE.with(|c| c.replace(outer)).flatten();
    result.map_err(|_| Panicked {
        description: captured.unwrap_or_else(|| "(panic without a description)".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_one_escaped_line() {
        let err = contain(|| -> u8 { panic!("bad\nline \u{202e} {}", 7) }).unwrap_err();
        assert!(
            err.description.contains("src/cli/guard.rs:"),
            "{}",
            err.description
        );
        assert!(
            err.description.ends_with(": bad\\u{a}line \\u{202e} 7"),
            "{}",
            err.description
        );
        assert!(err.description.chars().all(|c| matches!(c, ' '..='~')));
    }

    #[test]
    fn a_byte_slicing_panic_is_contained() {
        let s = String::from("https:xé.example");
        let n = 8;
        let err = contain(|| s[..n].len()).unwrap_err();
        assert!(
            err.description.contains("is not a char boundary"),
            "{}",
            err.description
        );
    }

    #[test]
    fn no_panic_passes_the_value_through_and_nesting_restores_the_outer_capture() {
        assert_eq!(contain(|| 42), Ok(42));
        let outer = contain(|| {
            let inner = contain(|| -> () { panic!("inner") });
            assert!(inner.unwrap_err().description.ends_with(": inner"));
            panic!("outer")
        });
        assert!(outer.unwrap_err().description.ends_with(": outer"));
    }

    #[test]
    fn long_descriptions_are_cut() {
        let long = "x".repeat(5000);
        let err = contain(|| -> () { panic!("{long}") }).unwrap_err();
        assert!(err.description.chars().count() <= MAX_DESCRIPTION_CHARS + 1);
        assert!(err.description.ends_with('…'));
    }
}
