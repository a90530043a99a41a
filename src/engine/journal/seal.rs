//! The end of a journal made safe to append to: a torn (or zero-filled)
//! last line is cut, a complete unterminated one gets its newline
//! ([`TailFix`], planned from the scan's [`Tail`]).

use serde::Serialize;

use super::{Tail, TailState};

/// What happens to the end of the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum TailFix {
    /// Nothing: it ends with a terminator.
    None,
    /// A torn (or zero-filled) tail is cut off.
    Cut {
        /// Where the cut starts.
        offset: u64,
        /// Bytes removed.
        bytes: u64,
        /// Of those, NUL bytes.
        zero_bytes: u64,
    },
    /// A complete last record gets its missing newline.
    Terminate {
        /// Where the newline goes.
        offset: u64,
    },
}

impl TailFix {
    /// How a file with this tail is sealed: a torn (or zero-filled) last
    /// line is cut, a complete one is terminated.
    pub fn of(tail: &Tail) -> TailFix {
        match tail.state {
            TailState::Torn => TailFix::Cut {
                offset: tail.offset,
                bytes: tail.bytes,
                zero_bytes: tail.zero_bytes,
            },
            TailState::Unterminated => TailFix::Terminate {
                offset: tail.offset + tail.bytes,
            },
            TailState::Empty | TailState::Clean => TailFix::None,
        }
    }
}
