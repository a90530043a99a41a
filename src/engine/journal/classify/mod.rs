//! What one journal line is, judged on its own ([`classify`]), by two
//! siblings that share the model and nothing else:
//!
//! - `fast`: a single pass over a line in upstream's exact form (sorted
//!   keys, compact separators, ASCII, canonical escapes and numbers), with
//!   no value tree; `None` for any other line. Most lines take it.
//! - `general`: upstream's rules of `WorkLeaseJournal._load` for every
//!   line, through the Python-compatible parser, with the diagnostics
//!   upstream does not make.
//!
//! The contract between them, checked on every fixture and on generated
//! and fuzzed lines: whenever the fast path answers, its answer equals the
//! general path's (`Classified::detached` aside). The two paths are
//! reachable apart only by those checks, through the test hooks.

mod fast;
mod general;

pub use fast::{payload_member, payload_members};

use super::model::Classified;

/// Classifies one line (without its terminator): the fast path for lines
/// in upstream's exact form, the general path for everything else.
pub fn classify(content: &[u8]) -> Classified {
    fast::classify(content).unwrap_or_else(|| general::classify(content))
}

/// The fast path alone: `Some` only for a line in upstream's exact form
/// (a test hook: the checks compare it with [`classify_general`]).
#[cfg(any(test, feature = "test-hooks"))]
pub fn classify_fast(content: &[u8]) -> Option<Classified> {
    fast::classify(content)
}

/// The general path alone, which classifies any line (a test hook: the
/// reference the fast path is checked against).
#[cfg(any(test, feature = "test-hooks"))]
pub fn classify_general(content: &[u8]) -> Classified {
    general::classify(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agrees(line: &[u8]) -> bool {
        match classify_fast(line) {
            Some(fast) => {
                assert_eq!(
                    fast.detached(line),
                    classify_general(line),
                    "{}",
                    String::from_utf8_lossy(line)
                );
                true
            }
            None => false,
        }
    }

    #[test]
    fn upstream_lines_take_the_fast_path_and_agree() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/");
        let mut fast = 0;
        let mut total = 0;
        for entry in std::fs::read_dir(format!("{dir}fidelity")).unwrap() {
            let path = entry.unwrap().path().join("journal.jsonl");
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            for line in bytes.split(|&b| b == b'\n') {
                total += 1;
                if agrees(line) {
                    fast += 1;
                }
            }
        }
        assert!(
            fast * 2 > total,
            "most upstream lines are canonical: {fast}/{total}"
        );
    }

    #[test]
    fn non_canonical_forms_fall_back() {
        let id = "b3ebf1ab1e22ca48684634c8a2b31bf4f956e0964f7eccb2c2e09cb59f6cc088";
        let ok = format!(
            r#"{{"attempts":1,"clock":"legacy","id":"{id}","op":"lease","payload":{{"path":"legacy","target_branch":5}},"time":123456.789,"worker":1}}"#
        );
        assert!(agrees(ok.as_bytes()));
        for (from, to) in [
            ("\"time\":123456.789", "\"time\":123456.7890"),
            ("\"time\":123456.789", "\"time\":1e400"),
            ("\"worker\":1", "\"worker\":\"1\""),
            ("\"attempts\":1", "\"attempts\":0"),
            ("\"path\":\"legacy\"", "\"path\":\"leg\\u0061cy\""),
            ("\"path\":\"legacy\"", "\"path\":\"legacy\\/\""),
            (
                "\"path\":\"legacy\",\"target_branch\":5",
                "\"target_branch\":5,\"path\":\"legacy\"",
            ),
            (
                "\"path\":\"legacy\",\"target_branch\":5",
                "\"path\":\"legacy\",\"path\":\"legacy\"",
            ),
            ("\"target_branch\":5", "\"target_branch\":-0"),
            ("\"target_branch\":5", "\"target_branch\":05"),
            ("\"target_branch\":5", "\"target_branch\": 5"),
            ("\"target_branch\":5", "\"target_branch\":5.0e0"),
            ("\"path\":\"legacy\"", "\"p\\u00e9\":\"legacy\""),
            ("\"path\":\"legacy\"", "\"path\":\"caf\u{e9}\""),
        ] {
            let changed = ok.replacen(from, to, 1);
            assert_ne!(changed, ok, "{from}");
            assert!(classify_fast(changed.as_bytes()).is_none(), "{changed}");
        }
        // Canonical escapes and numbers stay on the fast path.
        for (from, to) in [
            (
                "\"path\":\"legacy\"",
                "\"path\":\"\\u00e9\\ud83d\\ude00\\u007f\\u0001\\n\\\"\"",
            ),
            (
                "\"target_branch\":5",
                "\"target_branch\":18446744073709551615",
            ),
            (
                "\"target_branch\":5",
                "\"target_branch\":[1e+16,1e-05,0.5,-3,{},[]]",
            ),
        ] {
            let changed = ok.replacen(from, to, 1);
            assert!(classify_fast(changed.as_bytes()).is_some(), "{changed}");
            assert!(agrees(changed.as_bytes()));
        }
    }
}
