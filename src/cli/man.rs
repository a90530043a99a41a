//! Man pages generated from the clap definitions, with the sections clap
//! does not know: EXIT STATUS, EXAMPLES and, for inspect, JSON OUTPUT.
//! The pages are checked in under man/ and a test fails when they drift;
//! `LEASEJOURNAL_BLESS=1 cargo test --test cli man_pages` rewrites them.

use clap::CommandFactory;
use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, roman};

use super::{Cli, EXIT_STATUS};
use crate::verify::CATALOG;

struct Extra {
    examples: &'static [(&'static str, &'static str)],
    sections: &'static [(&'static str, &'static [&'static str])],
    catalog: bool,
}

/// How the writing subcommands change files.
const WRITING: (&str, &[&str]) = (
    "WRITING",
    &[
        "Without --apply or --output nothing is written, created or locked: the plan is printed and the exit status is 0.",
        "With --apply the directory's .master-queue.lock is taken exactly as the master takes it (flock LOCK_EX|LOCK_NB; --lock-timeout waits) and held until the last fsync; a running master makes the command exit with status 3. The file must still be the one that was read (device, inode, size, mtime) or nothing is written. The original is copied to FILE.bak.<UTC timestamp> (or into --backup-dir) and fsynced first, unless --no-backup.",
        "A rewrite goes to FILE.leasejournal.<pid>.tmp in the same directory (created exclusively, never through a symlink, with the original's mode and owner), is re-read and replayed as it is written, then fsynced, and is renamed over FILE only if the re-read covered every byte written and it replays to the planned state; then the directory is fsynced. An append first cuts a torn or zero-filled tail (or adds a missing newline), then writes all new records in one write and fsyncs, then re-reads the file. Symlinked targets are refused. A later run removes this tool's stale temporary files under the lock.",
        "Every record written is byte-identical to what upstream writes: sorted keys, \",\" and \":\" separators, ensure_ascii escaping, Python float repr, \"clock\":\"unix\" on new records.",
        "The JSON report (--format json): {\"schema_version\":1,\"command\",\"mode\":\"dry-run\"|\"apply\"|\"output\",\"files\":[{\"path\",\"kind\",\"plan\",\"written\",\"backup\",\"output\",\"removed_temp_files\",\"note\"}]}; each plan carries the replay state before and after as {\"active\",\"completed\",\"digest\"}.",
    ],
);

fn extra(name: &str) -> Extra {
    match name {
        "inspect" => Extra {
            examples: &[
                (
                    "leasejournal inspect /out/run1",
                    "Everything a state directory says, with the master lock status.",
                ),
                (
                    "leasejournal inspect --worker 3 /out/run1/.work_leases.jsonl",
                    "Active leases of worker rank 3.",
                ),
                (
                    "leasejournal inspect --history 83ce7d /out/run1/.work_leases.jsonl",
                    "Every record of the ids starting with 83ce7d and what replay did with it.",
                ),
                (
                    "leasejournal inspect --format json --now 1754550100 state.json | jq .restored",
                    "The exact mapping upstream's restore yields, with reproducible ages.",
                ),
            ],
            sections: &[(
                "JSON OUTPUT",
                &[
                    "With --format json, stdout carries one JSON document with \"schema_version\":1 and a \"kind\".",
                    "journal: {\"kind\":\"journal\",\"path\",\"bytes\",\"lines\",\"records\":{\"lease\",\"done\",\"reclaim\",\"other\"},\"clocks\":{\"unix\",\"legacy\",\"unmarked\",\"other\"},\"leases_accepted\",\"ignored\":{reason:count},\"invalid_utf8_lines\",\"invalid_utf8_bytes\",\"lenient_leases\",\"records_with_unknown_fields\",\"non_canonical_records\",\"tail\":{\"state\",\"bytes\",\"offset\",\"zero_bytes\"},\"events\",\"time_range\",\"active_count\",\"completed_count\",\"filter\",\"active\":[{\"id\",\"worker\",\"time\",\"attempts\",\"clock\",\"line\",\"offset\",\"age_seconds\",\"path\"}],\"completed\":[id],\"history\"}. \"active\" is the state upstream's loader reaches, sorted by id; \"clock\" is \"unix\" or \"legacy\"; tail \"state\" is empty, clean, torn or unterminated.",
                    "Ignore reasons: blank, torn-tail, glued-record, bom, duplicate-member, non-finite-number, too-deep, integer-too-long, corrupt, not-an-object, bad-id, payload-not-object, payload-not-finite, payload-id-mismatch, rejected-field, orphan-done, orphan-reclaim, unknown-op.",
                    "snapshot: {\"kind\":\"snapshot\",\"path\",\"bytes\",\"parse\":{\"ok\",\"error\",\"is_object\",\"duplicate_members\",\"nonfinite_constants\",\"invalid_utf8_bytes\"},\"clock\",\"tasks\",\"totals\",\"leases\",\"changes\",\"restored\"}. \"restored\" is exactly the object upstream's restore and to_mapping() yield (keys clock, leases, shard_count, stats, steal_window, worker_count), with NaN and infinities written as the strings \"NaN\", \"Infinity\", \"-Infinity\"; null when upstream would start empty.",
                    "directory: {\"kind\":\"directory\",\"path\",\"files\":[the objects above],\"missing\",\"stale_temp_files\",\"master_lock\":{\"present\",\"held\",\"holders\"}}.",
                ],
            )],
            catalog: false,
        },
        "recover" => Extra {
            examples: &[
                (
                    "leasejournal recover /out/run1",
                    "The plan: the tail to seal, the leases resume would reclaim, the state before and after. Nothing is written.",
                ),
                (
                    "leasejournal recover --apply /out/run1",
                    "Carry it out under the master's lock, with a backup of each file.",
                ),
                (
                    "leasejournal recover --salvage --ttl 600 --apply .work_leases.jsonl",
                    "Also split glued records back out; reclaim only leases at least 10 minutes old.",
                ),
                (
                    "leasejournal recover --output recovered.jsonl .work_leases.jsonl",
                    "Write the result to a new file; the journal stays as it is.",
                ),
            ],
            sections: &[WRITING],
            catalog: false,
        },
        "migrate" => Extra {
            examples: &[
                (
                    "leasejournal migrate /out/run1",
                    "What migrating the directory would change.",
                ),
                (
                    "leasejournal migrate --apply --rewrite /out/run1",
                    "Reclaim legacy leases, compact the journals, rewrite a legacy snapshot.",
                ),
            ],
            sections: &[WRITING],
            catalog: false,
        },
        "compact" => Extra {
            examples: &[
                (
                    "leasejournal compact --apply /out/run1/.work_leases.jsonl",
                    "Rewrite the journal as its state, completed ids included.",
                ),
                (
                    "leasejournal compact --drop-completed --output upstream.jsonl .work_leases.jsonl",
                    "Exactly what upstream's compact() would write, into a new file.",
                ),
            ],
            sections: &[WRITING],
            catalog: false,
        },
        "diff" => Extra {
            examples: &[
                (
                    "leasejournal diff last-good/.state_tasks.json /out/run1/.state_tasks.json",
                    "What changed in the statistics since the last good run.",
                ),
                (
                    "leasejournal diff --ignore elapsed --ignore last_lease --only changed a.json b.json",
                    "Only changed fields, without the noisy ones.",
                ),
                (
                    "leasejournal diff --history backup.jsonl /out/run1/.work_leases.jsonl",
                    "Which records of the live journal changed which lease.",
                ),
            ],
            sections: &[(
                "JSON OUTPUT",
                &[
                    "{\"schema_version\":1,\"kind\":\"snapshot\"|\"journal\",\"a\",\"b\",\"identical\":bool,\"changes\":[{\"entity\":\"task\"|\"lease\"|\"config\"|\"active\"|\"completed\",\"change\":\"added\"|\"removed\"|\"changed\",\"id\",\"field\",\"before\",\"after\",\"delta\"}],\"counts\":{\"task changed\":n,...},\"summary\":{\"a\",\"b\"},\"bytes\":{\"relation\":\"identical\"|\"appended\"|\"truncated\"|\"diverged\",...},\"history\",\"notes\"}. Snapshot times are compared as the files hold them (restore zeroes legacy ones).",
                ],
            )],
            catalog: false,
        },
        "completions" => Extra {
            examples: &[
                (
                    "leasejournal completions bash > ~/.local/share/bash-completion/completions/leasejournal",
                    "Install bash completions.",
                ),
                (
                    "leasejournal completions zsh > ~/.zfunc/_leasejournal",
                    "Install zsh completions.",
                ),
            ],
            sections: &[],
            catalog: false,
        },
        "verify" => Extra {
            examples: &[
                (
                    "leasejournal verify --quiet /out/run1 && SYMCC_RESUME=1 mpirun ...",
                    "Resume only when the state directory has no errors.",
                ),
                (
                    "leasejournal verify --strict --format json /out/run1",
                    "Fail on warnings too; a JSON report for the job log.",
                ),
                (
                    "leasejournal verify --ttl 600 --now 1754550100 .work_leases.jsonl",
                    "Judge lease ages against a fixed time and a 10-minute TTL.",
                ),
                (
                    "leasejournal verify --ignore non-canonical-encoding --max-examples 3 a.jsonl b.jsonl",
                    "Two journals, one code muted, three examples per code.",
                ),
            ],
            sections: &[(
                "JSON OUTPUT",
                &[
                    "{\"schema_version\":1,\"verdict\":\"ok\"|\"warnings\"|\"errors\",\"findings\":[{\"code\",\"severity\",\"file\",\"line\",\"offset\",\"id\",\"message\"}],\"counts\":{code:n},\"severities\":{severity:n},\"checked\":[\"L1\",\"L2\",\"L4\",\"L5\",\"L6\"],\"not_checkable\":[\"L3\",\"L7\"],\"targets\":[{\"path\",\"kind\",\"verdict\",\"counts\"}],\"errors\":[{\"path\",\"message\"}],\"settings\":{...}}. Counts are exact; findings hold at most --max-examples per code.",
                ],
            )],
            catalog: true,
        },
        "explain" => Extra {
            examples: &[
                (
                    "leasejournal explain glued-record",
                    "What a glued record is and how to get it back.",
                ),
                ("leasejournal explain --list", "The whole catalog."),
            ],
            sections: &[],
            catalog: true,
        },
        _ => Extra {
            examples: &[
                (
                    "leasejournal inspect /out/run1",
                    "What the state directory says after a reboot or crash.",
                ),
                (
                    "leasejournal verify /out/run1",
                    "The go/no-go before SYMCC_RESUME=1.",
                ),
                (
                    "leasejournal completions bash",
                    "A completion script for bash.",
                ),
            ],
            sections: &[],
            catalog: false,
        },
    }
}

fn render(cmd: clap::Command, name: &str) -> Vec<u8> {
    let man = Man::new(cmd)
        .date("")
        .source(format!("leasejournal {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render(&mut out);
    let extra = extra(name);
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, text) in EXIT_STATUS {
        roff.control("TP", [])
            .text([bold(code.to_string())])
            .text([roman(*text)]);
    }
    roff.control("SH", ["EXAMPLES"]);
    for (command, text) in extra.examples {
        roff.control("TP", [])
            .text([bold(*command)])
            .text([roman(*text)]);
    }
    for (title, paragraphs) in extra.sections {
        roff.control("SH", [*title]);
        for p in *paragraphs {
            roff.control("PP", []).text([roman(*p)]);
        }
    }
    if extra.catalog {
        roff.control("SH", ["FINDINGS"]);
        roff.control("PP", []).text([roman(
            "Codes are stable and never renamed. Severity error fails verify; warning fails only with --strict; info never fails.",
        )]);
        for c in CATALOG {
            roff.control("TP", [])
                .text([
                    bold(c.code),
                    roman(format!(" ({}, {})", c.severity.as_str(), c.scope)),
                ])
                .text([roman(format!(
                    "{} {} Upstream: {} Fix: {}",
                    c.meaning, c.why, c.upstream, c.fix
                ))]);
        }
    }
    out.extend_from_slice(roff.render().as_bytes());
    out
}

/// Every page: (file name, contents).
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let cmd = Cli::command();
    let mut pages = vec![(
        "leasejournal.1".to_string(),
        render(cmd.clone(), "leasejournal"),
    )];
    for sub in cmd.get_subcommands() {
        let name = sub.get_name().to_string();
        let full = format!("leasejournal-{name}");
        let sub = sub
            .clone()
            .name(full.clone())
            .bin_name(format!("leasejournal {name}"));
        pages.push((format!("{full}.1"), render(sub, &name)));
    }
    pages
}
