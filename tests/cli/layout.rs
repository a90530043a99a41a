//! The layout the code keeps (see lib.rs): layers with data flowing one
//! way — engine → store → operations → face (render, cli) — no import
//! circle between sibling modules, commands that are leaves (no command
//! uses another, and chains of imports among the operations stay short),
//! command files that only parse, run one operation and emit, and a map
//! in lib.rs that names every module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every module of the crate: its path (`operations::verify`) and its
/// source, with unit tests cut off (they may use anything).
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("list src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .expect("under src")
            .with_extension("");
        let mut parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        if parts == ["lib"] || parts == ["main"] {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let text = match text.find("#[cfg(test)]\nmod tests") {
            Some(at) => text[..at].to_string(),
            None => text,
        };
        modules.insert(parts.join("::"), text);
    }
    modules
}

/// The module paths a source names, comments left out: `crate::a::b`,
/// `crate::a::{b, c::{d, E}}` and `super::x` (relative to `module`). An
/// item that is not a module (a type, a constant) names the module it is
/// in.
fn references(module: &str, text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        path_or_group("", &code[at + "crate::".len()..], &mut found);
    }
    // `super` of `a::b` is `a`, whether b is a file or a directory.
    let parts: Vec<&str> = module.split("::").collect();
    let base = parts[..parts.len() - 1].join("::");
    let prefix = if base.is_empty() {
        String::new()
    } else {
        format!("{base}::")
    };
    for (at, _) in code.match_indices("super::") {
        path_or_group(&prefix, &code[at + "super::".len()..], &mut found);
    }
    found
        .into_iter()
        .map(|p| p.trim_end_matches("::").to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Records what `rest` (following `prefix`, which ends in `::` or is
/// empty) names: a path of modules, or a `{…}` group of them, groups
/// nested at any depth.
fn path_or_group(prefix: &str, rest: &str, found: &mut BTreeSet<String>) {
    let ident = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':';
    let path: String = rest.chars().take_while(|&c| ident(c)).collect();
    let after = &rest[path.len()..];
    let Some(group) = after.strip_prefix('{') else {
        found.insert(format!("{prefix}{path}"));
        return;
    };
    let prefix = format!("{prefix}{path}");
    // The group's items, split at the commas of its own level.
    let mut depth = 0;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    for item in items {
        let item = item.trim();
        if item == "self" || item.starts_with("self ") {
            found.insert(prefix.clone());
        } else if item.starts_with(|c: char| c.is_ascii_lowercase()) {
            path_or_group(&prefix, item, found);
        } else if !item.is_empty() {
            // A type or a constant: the module it is in.
            found.insert(prefix.clone());
        }
    }
}

/// The module a path names: its longest prefix that is a module.
fn resolve<'a>(modules: &'a BTreeMap<String, String>, path: &str) -> Option<&'a str> {
    let mut parts: Vec<&str> = path.split("::").collect();
    while !parts.is_empty() {
        if let Some((name, _)) = modules.get_key_value(&parts.join("::")) {
            return Some(name);
        }
        parts.pop();
    }
    None
}

/// Which modules each module uses (itself and its ancestors left out).
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let mut graph = BTreeMap::new();
    for (module, text) in &modules {
        let uses: BTreeSet<String> = references(module, text)
            .iter()
            .filter_map(|r| resolve(&modules, r))
            .filter(|target| {
                *target != module.as_str() && !module.starts_with(&format!("{target}::"))
            })
            .map(str::to_string)
            .collect();
        graph.insert(module.clone(), uses);
    }
    graph
}

/// Edges between siblings: `a::x::… → a::y::…` becomes `a::x → a::y`.
fn sibling_edges(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets {
            let a: Vec<&str> = from.split("::").collect();
            let b: Vec<&str> = to.split("::").collect();
            let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            if common == a.len() || common == b.len() {
                continue;
            }
            edges
                .entry(a[..=common].join("::"))
                .or_default()
                .insert(b[..=common].join("::"));
        }
    }
    edges
}

#[test]
fn no_two_sibling_modules_use_each_other_even_through_others() {
    let edges = sibling_edges(&dependencies());
    // A module may reach a sibling that reaches it back only if there is a
    // circle: search from every module.
    let mut circles = Vec::new();
    for start in edges.keys() {
        let mut stack = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = stack.pop() {
            let last = path.last().expect("non-empty");
            for next in edges.get(last).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    circle.push(next.clone());
                    circles.push(circle.join(" → "));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
    assert_eq!(circles, Vec::<String>::new(), "import circles");
}

#[test]
fn data_flows_from_the_engine_through_the_operations_to_the_face() {
    let graph = dependencies();
    let layer = |module: &str| match module.split("::").next() {
        Some("engine") => 0,
        Some("store") => 1,
        Some("operations") => 2,
        Some("render") => 3,
        Some("cli") => 4,
        // The fuzz properties, a test hook, may use every layer.
        _ => 5,
    };
    let mut upwards = Vec::new();
    for (from, targets) in &graph {
        for to in targets {
            if layer(to) > layer(from) {
                upwards.push(format!("{from} uses {to}"));
            }
        }
    }
    assert_eq!(upwards, Vec::<String>::new(), "a layer uses one above it");
    let engine_from_cli: Vec<String> = graph
        .iter()
        .filter(|(from, _)| from.starts_with("cli"))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| t.starts_with("engine"))
                .map(move |t| format!("{from} uses {t}"))
        })
        .collect();
    assert_eq!(
        engine_from_cli,
        Vec::<String>::new(),
        "the command line reaches the engine only through an operation"
    );
}

/// The modules of `operations` that are not commands: what the commands
/// share (report types, findings and their checks, exit statuses,
/// contract versions, numbers).
const SHARED_OPERATIONS: [&str; 8] = [
    "operations::exit",
    "operations::findings",
    "operations::ledger",
    "operations::ledger_change",
    "operations::numbers",
    "operations::report",
    "operations::schema",
    "operations::table",
];

/// The command an `operations` module belongs to (`operations::verify`
/// for `operations::verify::report`), or `None` for a shared module.
fn command_of(module: &str) -> Option<String> {
    let parts: Vec<&str> = module.split("::").collect();
    if parts.first() != Some(&"operations") || parts.len() < 2 {
        return None;
    }
    let top = format!("operations::{}", parts[1]);
    (!SHARED_OPERATIONS.contains(&top.as_str())).then_some(top)
}

#[test]
fn the_import_graph_sees_modules_types_and_nested_groups() {
    let graph = dependencies();
    let uses = |from: &str, to: &str| graph.get(from).is_some_and(|t| t.contains(to));
    // Types only: `use crate::operations::report::{Command, Report};`.
    assert!(uses("operations::repair", "operations::report"));
    // A module and a type: `use crate::store::session::{self, Opened, …}`.
    assert!(uses("operations::compact", "store::session"));
    // Through `super::`: `use super::catalog::{At, Code, …}`.
    assert!(uses(
        "operations::findings::journal",
        "operations::findings::catalog"
    ));
    // A nested group: `use crate::operations::findings::{…, catalog::{Code, Severity}}`.
    assert!(uses("cli::check", "operations::findings::catalog"));
    // Comments name nothing.
    let commented = references(
        "operations::x",
        "//! See [`crate::store::durable`].\nfn f() {}",
    );
    assert_eq!(commented, BTreeSet::new());
}

#[test]
fn no_command_uses_another_command() {
    let mut crossings = Vec::new();
    for (from, targets) in dependencies() {
        let Some(command) = command_of(&from) else {
            continue;
        };
        for to in targets {
            if let Some(other) = command_of(&to)
                && other != command
            {
                crossings.push(format!("{from} uses {to}"));
            }
        }
    }
    assert_eq!(crossings, Vec::<String>::new(), "a command uses another");
}

#[test]
fn chains_of_imports_among_the_operations_are_at_most_three_modules_long() {
    let graph = dependencies();
    let inside = |m: &str| m.starts_with("operations::");
    // The longest chain from each module, by depth-first search (the
    // graph has no circles: another test checks that).
    fn longest(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        inside: &dyn Fn(&str) -> bool,
        memo: &mut BTreeMap<String, Vec<String>>,
    ) -> Vec<String> {
        if let Some(chain) = memo.get(module) {
            return chain.clone();
        }
        let mut best = Vec::new();
        for next in graph.get(module).into_iter().flatten() {
            if inside(next) && next != module {
                let chain = longest(next, graph, inside, memo);
                if chain.len() > best.len() {
                    best = chain;
                }
            }
        }
        let mut chain = vec![module.to_string()];
        chain.extend(best);
        memo.insert(module.to_string(), chain.clone());
        chain
    }
    let mut memo = BTreeMap::new();
    let too_long: Vec<String> = graph
        .keys()
        .filter(|m| inside(m))
        .map(|m| longest(m, &graph, &inside, &mut memo))
        .filter(|chain| chain.len() > 3)
        .map(|chain| chain.join(" → "))
        .collect();
    assert_eq!(
        too_long,
        Vec::<String>::new(),
        "chains of more than three modules"
    );
}

#[test]
fn each_command_file_only_parses_runs_one_operation_and_emits() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    // The shared parts of the command line, not commands.
    let shared = [
        "check.rs",
        "diff_options.rs",
        "forensics.rs",
        "lease_table.rs",
        "ledger.rs",
        "mod.rs",
        "man.rs",
        "output.rs",
        "select.rs",
        "table_args.rs",
        "write.rs",
    ];
    let mut long = Vec::new();
    let mut commands = Vec::new();
    for entry in std::fs::read_dir(&cli).expect("list src/cli") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if shared.contains(&name.as_str()) {
            continue;
        }
        let lines = std::fs::read_to_string(&path)
            .expect("read")
            .lines()
            .count();
        if lines > 120 {
            long.push(format!("{name}: {lines} lines"));
        }
        commands.push(name);
    }
    commands.sort();
    assert_eq!(
        commands,
        [
            "compact.rs",
            "completions.rs",
            "diff.rs",
            "explain.rs",
            "inspect.rs",
            "migrate.rs",
            "recover.rs",
            "repair.rs",
            "restore.rs",
            "rollback.rs",
            "verify.rs"
        ]
    );
    assert_eq!(long, Vec::<String>::new(), "command files over 120 lines");
}

#[test]
fn the_map_in_lib_rs_names_every_module() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read lib.rs");
    let map: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let missing: Vec<String> = modules()
        .into_keys()
        .filter(|m| !map.contains(&format!("`{m}`")) && !map.contains(&format!("[`{m}`]")))
        .collect();
    assert_eq!(
        missing,
        Vec::<String>::new(),
        "modules missing from the map"
    );
}
