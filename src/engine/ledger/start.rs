//! How the next master start reads the ledger, as `master()` decides it
//! (kilb/symcc `util/mpi_fuzzing_helper.py`): whether at all, and with how
//! many shards.
//!
//! ```python
//! num_workers = comm.Get_size() - 1          # 0 refuses to start
//! try:
//!     state_shards = max(1, int(os.environ.get(
//!         "SYMCC_STATE_SHARDS", str(min(64, max(1, num_workers))))))
//! except ValueError:
//!     state_shards = min(64, max(1, num_workers))
//! if os.environ.get("SYMCC_PERSISTENT_STATE", "1").lower() not in {
//!         "0", "false", "off", "no"}:
//!     hash_ledger = PersistentShardLedger(..., state_shards, "processed")
//! ```
//!
//! Values in, data out: the caller reads the environment.

use crate::engine::json::{Value, py_int};

/// The default count for `num_workers` workers: `min(64, max(1, n))`.
pub fn default_count(workers: u32) -> u32 {
    workers.clamp(1, 64)
}

/// What `int()` makes of `SYMCC_STATE_SHARDS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvCount {
    /// `max(1, int(value))`, at most `u32::MAX` (a count that high reads
    /// every file there can be).
    Count(u32),
    /// `int()` raises `ValueError`: the master falls back to the default.
    NotAnInteger,
}

/// `max(1, int(value))` of `SYMCC_STATE_SHARDS`, with Python's `int()` of a
/// string: surrounding white space, a sign, underscores between digits and
/// Unicode digits are accepted, anything else raises.
pub fn env_count(value: &str) -> EnvCount {
    match py_int(&Value::Str(value.into())) {
        Ok(n) if n.is_negative() || n.is_zero() => EnvCount::Count(1),
        Ok(n) => EnvCount::Count(
            n.to_u64()
                .map_or(u32::MAX, |n| u32::try_from(n).unwrap_or(u32::MAX)),
        ),
        Err(_) => EnvCount::NotAnInteger,
    }
}

/// Whether `SYMCC_PERSISTENT_STATE` (absent: `"1"`) turns the ledger off:
/// its `lower()` is `0`, `false`, `off` or `no`, exactly (no stripping).
pub fn persistent_state_off(value: Option<&str>) -> bool {
    value.is_some_and(|v| matches!(v.to_lowercase().as_str(), "0" | "false" | "off" | "no"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_the_master_makes_them() {
        assert_eq!(default_count(0), 1);
        assert_eq!(default_count(8), 8);
        assert_eq!(default_count(100), 64);
        assert_eq!(env_count("16"), EnvCount::Count(16));
        assert_eq!(env_count(" +1_6\n"), EnvCount::Count(16));
        assert_eq!(env_count("١٦"), EnvCount::Count(16));
        assert_eq!(env_count("0"), EnvCount::Count(1));
        assert_eq!(env_count("-7"), EnvCount::Count(1));
        assert_eq!(env_count("99999999999"), EnvCount::Count(u32::MAX));
        for bad in ["", "8.0", "0x10", "1__6", "_16", "sixteen", "1 6"] {
            assert_eq!(env_count(bad), EnvCount::NotAnInteger, "{bad:?}");
        }
    }

    #[test]
    fn persistent_state_is_off_only_for_the_four_words() {
        assert!(!persistent_state_off(None));
        for off in ["0", "false", "OFF", "No", "fAlSe"] {
            assert!(persistent_state_off(Some(off)), "{off}");
        }
        for on in ["1", "", " 0", "off ", "none", "n", "disabled"] {
            assert!(!persistent_state_off(Some(on)), "{on:?}");
        }
    }
}
