//! Property tests over what a user hands the mask parser: SPECs and mask files. Whatever
//! the input, the answer is a mask or an error, never a panic, in bounded time; a mask keeps
//! its promises (odd sides within the limit, finite taps) and errors stay short, quoting no
//! more than a cut token and nothing of a file's contents.

use convstream_core::{Mask, MaskParams, MAX_SIDE};
use convstream_testkit::hostile::{config, mask_spec, text, value_text, MESSAGE_LIMIT, TIME_LIMIT};
use proptest::prelude::*;
use std::time::Instant;

fn assert_mask_promises(mask: &Mask) {
    assert!(mask.width() % 2 == 1 && mask.width() <= MAX_SIDE, "{}", mask.width());
    assert!(mask.height() % 2 == 1 && mask.height() <= MAX_SIDE, "{}", mask.height());
    assert!(mask.coefficients().iter().all(|c| c.is_finite()));
    assert!(mask.bias().is_finite());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mask_specs_build_or_say_why(spec in mask_spec()) {
        // Files in SPECs are left to the mask-file property: here they would read the disk.
        prop_assume!(!spec.contains("file"));
        let started = Instant::now();
        match MaskParams::parse_spec(&spec).and_then(|params| Mask::build(&params, None)) {
            Ok(mask) => assert_mask_promises(&mask),
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for error in errors {
                    prop_assert!(error.to_string().len() < MESSAGE_LIMIT + spec.len(), "{error}");
                }
            }
        }
        prop_assert!(started.elapsed() < TIME_LIMIT, "{spec:?} took {:?}", started.elapsed());
    }

    #[test]
    fn mask_files_build_or_say_why_without_quoting_them(
        lines in proptest::collection::vec(
            prop_oneof![
                proptest::collection::vec(value_text(), 0..70).prop_map(|t| t.join(" ")),
                text(300),
                Just("SECRET-CONTENT-LINE root:$6$hash".to_string()),
            ],
            0..70,
        )
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mask.txt");
        let text = lines.join("\n");
        std::fs::write(&path, &text).unwrap();
        let params = MaskParams { file: Some(path), ..MaskParams::default() };
        let started = Instant::now();
        match Mask::build(&params, None) {
            Ok(mask) => assert_mask_promises(&mask),
            Err(errors) => {
                // At most three quoted tokens, then a count; each cut short.
                prop_assert!(errors.len() <= 4, "{} errors", errors.len());
                for error in &errors {
                    let message = error.to_string();
                    prop_assert!(message.len() < MESSAGE_LIMIT, "{message}");
                    prop_assert!(!message.contains("SECRET-CONTENT-LINE root"), "{message}");
                }
            }
        }
        prop_assert!(started.elapsed() < TIME_LIMIT);
    }
}
