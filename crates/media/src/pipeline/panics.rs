//! Panics inside a pipeline: the text kept of one (a pipeline that panics fails alone, with
//! its message), and the panics the reliability tests inject on purpose.

/// The most characters of a panic's message kept in `last_error` and the logs.
const PANIC_MESSAGE_CHARS: usize = 2000;

/// The text of a panic's payload (a `&str` or `String` for `panic!` and failed asserts).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    // A panic's message is the program's own, and is what tells the bug: shown whole up to
    // a bound (a user value it quotes is escaped and cut already), not cut to a value's 48.
    convstream_core::quoted_up_to(text, PANIC_MESSAGE_CHARS)
}

/// Fault injection for the reliability tests: `CONVSTREAM_INJECT_PANIC=NAME:STAGE,...`
/// makes pipeline NAME panic in STAGE (`pipeline`, `source`, `filter` or `sink`). Read once;
/// unset (always, in service) it costs one branch per stage start.
pub(super) fn inject_panic(pipeline: &str, stage: &str) {
    static PLAN: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    let plan = PLAN.get_or_init(|| {
        std::env::var("CONVSTREAM_INJECT_PANIC")
            .unwrap_or_default()
            .split(',')
            .filter_map(|entry| entry.split_once(':'))
            .map(|(name, stage)| (name.trim().to_string(), stage.trim().to_string()))
            .collect()
    });
    if plan.iter().any(|(name, at)| name == pipeline && at == stage) {
        panic!("injected panic in the {stage} stage (CONVSTREAM_INJECT_PANIC)");
    }
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn a_panic_message_is_kept_whole_up_to_its_bound() {
        let message = format!(
            "index out of bounds: the len is 3 but the index is 7 in {}",
            "x".repeat(150)
        );
        let payload: Box<dyn std::any::Any + Send> = Box::new(message.clone());
        assert_eq!(panic_message(payload.as_ref()), message);
        let huge: Box<dyn std::any::Any + Send> = Box::new("y".repeat(100_000));
        assert!(panic_message(huge.as_ref()).len() < 2100);
    }
}
